"""Screenshots of Prometheus's own graph page (Debian's classic UI) drawing panels of the
Grafana dashboard packaging/grafana/tasksnap.json: each panel's queries are read from the
dashboard, its variables set as the dashboard sets them with the Group variable chosen
(GROUP, a regular expression), `$__rate_interval` as 5 s (what the dashboard test uses for a
1 s scrape), stacked where the panel stacks, and opened in Debian's Chromium, headless, driven by Selenium. Each graph is
saved as a PNG once it has drawn series; a query with an error or no series fails the run.

Usage: serve-screenshot.py PROMETHEUS_URL DASHBOARD PROFILE_DIR RANGE GROUP TITLE=PNG...
"""

import json
import sys
import time
import urllib.parse

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

RATE_INTERVAL = "5s"


def panels(dashboard):
    """The dashboard's panels, those inside collapsed rows included."""
    for p in dashboard["panels"]:
        yield p
        yield from p.get("panels", [])


def substitute(expr, group, time_range):
    """The query as Grafana sends it with these variables (All is `.*`, as in the test)."""
    for var, value in [
        ("$__rate_interval", RATE_INTERVAL),
        ("$__range", time_range),
        ("$instance", ".*"),
        ("$group", group),
        ("$hierarchy", ".*"),
        ("$cgroup", ".*"),
        ("$top", "10"),
    ]:
        expr = expr.replace(var, value)
    if "$" in expr:
        sys.exit(f"a variable left in {expr}")
    return expr


def stacked(panel):
    """Whether the panel stacks its series (Grafana's stacking mode other than none)."""
    custom = panel.get("fieldConfig", {}).get("defaults", {}).get("custom", {})
    return custom.get("stacking", {}).get("mode", "none") != "none"


def graph_url(base, exprs, time_range, stack):
    """The classic graph page with one graph per query, each on its Graph tab."""
    params = {}
    for i, e in enumerate(exprs):
        params.update(
            {
                f"g{i}.expr": e,
                f"g{i}.tab": "0",
                f"g{i}.range_input": time_range,
                f"g{i}.stacked": "1" if stack else "0",
            }
        )
    return base + "/classic/graph?" + urllib.parse.urlencode(params)


def drawn(driver, n):
    """Whether all n graphs have finished: None while one is loading, else each one's
    (error text, number of legend entries)."""
    return driver.execute_script(
        """
        var out = [];
        for (var i = 0; i < arguments[0]; i++) {
          var w = document.getElementById('graph_wrapper' + i);
          if (!w) return null;
          var spinner = w.querySelector('.spinner');
          var err = w.querySelector('.error');
          var errText = err && err.offsetParent !== null ? err.textContent : '';
          var series = w.querySelectorAll('.legend li').length;
          // The metric names loaded: the page focuses the expression box once they are.
          var names = w.querySelectorAll('select.expression_select option').length > 1;
          var busy = (spinner && spinner.offsetParent !== null) || !names;
          if (busy || (!errText && !series)) return null;
          out.push([errText, series]);
        }
        return out;
        """,
        n,
    )


def shoot(driver, base, title, exprs, time_range, stack, png):
    driver.get(graph_url(base, exprs, time_range, stack))
    deadline = time.monotonic() + 60
    state = None
    while state is None:
        if time.monotonic() > deadline:
            sys.exit(f"{title}: the graph did not draw within 60 s")
        time.sleep(0.5)
        state = drawn(driver, len(exprs))
    for (err, series), e in zip(state, exprs):
        if err or series == 0:
            sys.exit(f"{title}: {e}: {err or 'no series'}")
    # The page's own graph wrappers, one under the other: the expression box, the range and
    # the graph with its legend; the expression box unfocused, as after a click elsewhere,
    # and each expression box as tall as its text, so that a long query is read whole.
    driver.execute_script(
        "document.activeElement.blur();"
        "document.querySelectorAll('textarea.expression_input').forEach(function (t) {"
        "  t.style.height = (t.scrollHeight + 2) + 'px'; });"
    )
    page = driver.find_element(By.ID, "graph_container")
    page.screenshot(png)
    print(f"{png}: {title}: {[s for _, s in state]} series")


def main():
    base, dashboard_path, profile, time_range, group = sys.argv[1:6]
    shots = [a.split("=", 1) for a in sys.argv[6:]]
    with open(dashboard_path) as f:
        dashboard = json.load(f)
    by_title = {p.get("title"): p for p in panels(dashboard) if p.get("type") != "row"}
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    # This machine has no network: without these Chromium reaches for its update, sync and
    # field-trial servers.
    for flag in [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--window-size=1100,1400",
        "--user-data-dir=" + profile,
    ]:
        opts.add_argument(flag)
    driver = webdriver.Chrome(options=opts, service=Service("/usr/bin/chromedriver"))
    try:
        for title, png in shots:
            panel = by_title.get(title)
            if panel is None:
                sys.exit(f"the dashboard has no panel titled {title!r}")
            exprs = [substitute(t["expr"], group, time_range) for t in panel["targets"]]
            shoot(driver, base, title, exprs, time_range, stacked(panel), png)
    finally:
        driver.quit()


main()
