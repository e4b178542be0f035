(function () {
  "use strict";
  var W = 960, L = 70, R = 10;
  var data = JSON.parse(document.getElementById("chart-data").textContent);
  var byId = {};
  data.forEach(function (d) { byId[d.id] = d; });
  var tip = document.getElementById("tip");
  var listings = Array.prototype.slice.call(document.querySelectorAll(".listing"));
  function bytes(v) {
    var u = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
    while (Math.abs(v) >= 1024 && i < 4) { v /= 1024; i++; }
    return v.toFixed(1) + " " + u[i];
  }
  function fmt(u, v) {
    if (v === null || v === undefined) return "-";
    if (u === "pct") return v.toFixed(1) + "%";
    if (u === "bytes") return bytes(v);
    return String(Math.round(v * 100) / 100);
  }
  function iso(t) { return new Date(t * 1000).toISOString().replace(".000Z", "Z"); }
  function nearest(ts, t) {
    var lo = 0, hi = ts.length - 1;
    if (hi < 0) return -1;
    while (hi - lo > 1) {
      var mid = (lo + hi) >> 1;
      if (ts[mid] <= t) lo = mid; else hi = mid;
    }
    return Math.abs(ts[hi] - t) < Math.abs(ts[lo] - t) ? hi : lo;
  }
  function timeAt(svg, ev) {
    var r = svg.getBoundingClientRect();
    var x = (ev.clientX - r.left) * W / r.width;
    var t0 = +svg.dataset.t0, t1 = +svg.dataset.t1;
    return t0 + (x - L) / (W - L - R) * (t1 - t0);
  }
  function show(id) {
    var found = null;
    listings.forEach(function (e) {
      e.hidden = e.id !== id;
      if (e.id === id) found = e;
    });
    return found;
  }
  document.querySelectorAll("svg.chart").forEach(function (svg) {
    var d = byId[svg.id];
    if (!d) return;
    var cursor = svg.querySelector(".cursor");
    svg.addEventListener("mousemove", function (ev) {
      var i = nearest(d.t, timeAt(svg, ev));
      if (i < 0) return;
      var x = L + (d.t[i] - svg.dataset.t0) / (svg.dataset.t1 - svg.dataset.t0) * (W - L - R);
      cursor.setAttribute("x1", x);
      cursor.setAttribute("x2", x);
      tip.textContent = "";
      var head = document.createElement("b");
      head.textContent = iso(d.t[i]);
      tip.appendChild(head);
      d.s.forEach(function (s) {
        var line = document.createElement("div");
        line.textContent = s.n + ": " + fmt(d.u, s.v[i]);
        tip.appendChild(line);
      });
      tip.hidden = false;
      tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 4) + "px";
      tip.style.top = (ev.clientY + 14) + "px";
    });
    svg.addEventListener("mouseleave", function () {
      tip.hidden = true;
      cursor.setAttribute("x1", -1);
      cursor.setAttribute("x2", -1);
    });
    svg.addEventListener("click", function (ev) {
      if (!listings.length) return;
      var t = timeAt(svg, ev), best = listings[0];
      listings.forEach(function (e) {
        if (Math.abs(+e.dataset.t - t) < Math.abs(+best.dataset.t - t)) best = e;
      });
      show(best.id);
      document.getElementById("moments").scrollIntoView();
    });
  });
  document.querySelectorAll("a.moment").forEach(function (a) {
    a.addEventListener("click", function (ev) {
      ev.preventDefault();
      if (show(a.getAttribute("href").slice(1))) {
        document.getElementById("moments").scrollIntoView();
      }
    });
  });
  document.querySelectorAll("input[name=groupby]").forEach(function (r) {
    r.addEventListener("change", function () {
      document.querySelectorAll(".grp").forEach(function (g) {
        g.hidden = g.id !== "grp-" + r.value;
      });
    });
  });
  if (location.hash) show(location.hash.slice(1));
})();
