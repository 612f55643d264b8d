// The console's little JavaScript: instants in the viewer's own zone, pages that refresh themselves, the
// timing field of the chosen kind, and the live preview of a timing through the API's preview (the page
// works without any of it).
(function () {
  "use strict";
  var csrf = (document.querySelector('meta[name="csrf-token"]') || {}).content || "";

  document.querySelectorAll("time.local").forEach(function (node) {
    var instant = new Date(node.getAttribute("datetime"));
    if (!isNaN(instant)) { node.textContent = instant.toLocaleString() + " (your time)"; }
  });

  // Regions marked data-refresh (each with an id) are brought up to date every few seconds from the same
  // page fetched again, while the tab is visible; a region being worked in (focus, a ticked box) waits.
  var regions = Array.prototype.slice.call(document.querySelectorAll("[data-refresh][id]"));
  function busy(node) {
    return node.contains(document.activeElement) && document.activeElement !== document.body ||
      node.querySelector("input:checked, details[open]") !== null;
  }
  function refreshRegions() {
    if (document.hidden) { return; }
    fetch(window.location.href, { credentials: "same-origin", headers: { "X-Recur-Refresh": "1" } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (!html) { return; }
        var fresh = new DOMParser().parseFromString(html, "text/html");
        regions.forEach(function (node) {
          var now = fresh.getElementById(node.id);
          if (now && !busy(node) && now.innerHTML !== node.innerHTML) { node.innerHTML = now.innerHTML; }
        });
      }).catch(function () { /* the next round tries again */ });
  }
  if (regions.length) {
    var seconds = Number(document.body.getAttribute("data-refresh-seconds")) || 5;
    window.setInterval(refreshRegions, seconds * 1000);
  }

  var form = document.getElementById("schedule-form");
  if (!form) { return; }
  var output = document.getElementById("preview");
  var timingNames = ["cron", "every", "interval_seconds", "rrule", "at", "after_seconds", "timezone", "start_at",
    "end_at", "only_between", "not_on", "calendar_id", "on_calendar", "jitter_seconds", "anchor_date", "day_or"];

  function kind() {
    var checked = form.querySelector('input[name="kind"]:checked');
    return checked ? checked.value : "cron";
  }

  function showKind() {
    form.querySelectorAll(".kind-field").forEach(function (node) {
      node.hidden = node.getAttribute("data-kind") !== kind();
    });
  }

  function body() {
    var out = { count: 5 };
    timingNames.forEach(function (name) {
      var input = form.elements[name];
      if (!input || !input.value.trim()) { return; }
      var isKind = ["cron", "every", "interval_seconds", "rrule", "at", "after_seconds"].indexOf(name) >= 0;
      if (isKind && name !== kind()) { return; }
      var value = input.value.trim();
      if (["interval_seconds", "after_seconds", "jitter_seconds", "calendar_id"].indexOf(name) >= 0) { value = Number(value); }
      if (name === "day_or") { value = value === "true"; }
      if (name === "not_on") { value = value.split(",").map(function (s) { return s.trim(); }).filter(Boolean); }
      out[name] = value;
    });
    return out;
  }

  function show(answer, ok) {
    output.textContent = "";
    if (!ok) {
      var problems = Object.keys(answer.errors || {}).map(function (k) { return k + ": " + answer.errors[k].join("; "); });
      output.textContent = problems.length ? problems.join(" · ") : (answer.message || "cannot preview");
      output.className = "preview error";
      return;
    }
    output.className = "preview";
    var title = document.createElement("strong");
    title.textContent = answer.description;
    output.appendChild(title);
    var list = document.createElement("ol");
    answer.next_runs.forEach(function (run) {
      var item = document.createElement("li");
      item.textContent = run.local.replace("T", " ") + " (" + answer.timezone + ")";
      list.appendChild(item);
    });
    output.appendChild(list);
  }

  var timer = null, sequence = 0;
  function refresh() {
    clearTimeout(timer);
    timer = setTimeout(function () {
      var mine = ++sequence;
      fetch(output.getAttribute("data-url"), {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
        body: JSON.stringify(body())
      }).then(function (response) {
        return response.json().then(function (answer) { if (mine === sequence) { show(answer, response.ok); } });
      }).catch(function () { if (mine === sequence) { output.textContent = "preview unavailable"; } });
    }, 250);
  }

  form.addEventListener("input", refresh);
  form.addEventListener("change", function () { showKind(); refresh(); });
  showKind();
  refresh();
}());
