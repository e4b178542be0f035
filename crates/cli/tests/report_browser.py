"""Opens a `tasksnap report` page in Debian's Chromium, headless, driven by Selenium through
Debian's chromedriver, and prints what the page did as one JSON object for
tests/report.rs to judge: console messages, every network request, each chart's
drawn vertices per series, the hostile text as the page shows it, elements a name could
have injected, what hovering a chart and choosing a moment showed.

Usage: report_browser.py REPORT.html PROFILE_DIR
"""

import json
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

page, profile = sys.argv[1], sys.argv[2]
opts = webdriver.ChromeOptions()
opts.binary_location = "/usr/bin/chromium"
# This machine has no network: without these Chromium reaches for its update, sync and
# field-trial servers (refused connections, console noise, seconds).
for flag in [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1200,900",
    "--user-data-dir=" + profile,
]:
    opts.add_argument(flag)
opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
driver = webdriver.Chrome(options=opts, service=Service("/usr/bin/chromedriver"))
try:
    started = time.monotonic()
    driver.get("file://" + page)
    load_ms = driver.execute_script(
        "var n = performance.getEntriesByType('navigation')[0];"
        "return n ? n.loadEventEnd : null;"
    )
    charts = driver.execute_script(
        """
        return Array.from(document.querySelectorAll('svg.chart')).map(function (svg) {
          return {
            id: svg.id,
            dataPoints: +svg.dataset.points,
            lines: Array.from(svg.querySelectorAll('polyline.series'))
                        .map(function (p) { return p.points.numberOfItems; }),
            areas: Array.from(svg.querySelectorAll('polygon.series'))
                        .map(function (p) { return p.points.numberOfItems; }),
          };
        });
        """
    )
    dom = driver.execute_script(
        """
        var texts = [];
        var walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
        while (walk.nextNode()) texts.push(walk.currentNode.nodeValue);
        return {
          texts: texts,
          scripts: document.querySelectorAll('script').length,
          imgs: document.querySelectorAll('img').length,
          pwned: typeof window.pwned === 'undefined' ? null : String(window.pwned),
          listings_shown: Array.from(document.querySelectorAll('.listing'))
                               .filter(function (e) { return !e.hidden; }).length,
          top_rows: document.querySelectorAll('#top-processes tbody tr').length,
        };
        """
    )
    # Hover over the middle of the host CPU chart: the tip shows a time and the values.
    chart = driver.find_element(By.ID, "host-cpu")
    ActionChains(driver).move_to_element(chart).perform()
    tip = driver.find_element(By.ID, "tip")
    hover = {"shown": tip.is_displayed(), "text": tip.text}
    # Choose the first moment the page lists: its listing is shown.
    links = driver.find_elements(By.CSS_SELECTOR, "ul.moments a.moment")
    chosen = None
    if links:
        links[0].click()
        target = links[0].get_attribute("href").split("#", 1)[1]
        el = driver.find_element(By.ID, target)
        chosen = {
            "id": target,
            "shown": el.is_displayed(),
            "rows": len(el.find_elements(By.CSS_SELECTOR, "tbody tr")),
        }
    console = [
        {"level": e["level"], "message": e["message"]} for e in driver.get_log("browser")
    ]
    requests = []
    for e in driver.get_log("performance"):
        m = json.loads(e["message"])["message"]
        # The page's own requests (its document's): the browser's new-tab page, open
        # before it, loads chrome:// resources of its own.
        if m.get("method") == "Network.requestWillBeSent" and m["params"].get(
            "documentURL"
        ) == "file://" + page:
            requests.append(m["params"]["request"]["url"])
    print(
        json.dumps(
            {
                "load_ms": load_ms,
                "wall_ms": (time.monotonic() - started) * 1000,
                "charts": charts,
                "dom": dom,
                "hover": hover,
                "moment": chosen,
                "console": console,
                "requests": requests,
            }
        )
    )
finally:
    driver.quit()
