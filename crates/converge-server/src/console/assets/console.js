// The Converge console's script: the live view of a running update
// (server-sent events from the stack's journal), the resource filter and
// the graph's links. Plain JavaScript; nothing is loaded from elsewhere.
(function () {
  "use strict";

  // The live view: one line per resource, updated in place as the
  // update's journal entries arrive.
  function live() {
    var section = document.getElementById("live");
    if (!section || !window.EventSource) {
      return;
    }
    var status = document.getElementById("live-status");
    var steps = document.getElementById("live-steps");
    var lines = {};
    var source = new EventSource(section.getAttribute("data-events"));

    function setStatus(text, state) {
      status.textContent = text;
      status.className = state;
      section.setAttribute("data-state", state);
    }

    function line(urn, name, type) {
      var li = lines[urn];
      if (li) {
        return li;
      }
      li = document.createElement("li");
      li.setAttribute("data-urn", urn);
      var label = document.createElement("span");
      label.className = "name";
      label.textContent = name || urn;
      var kind = document.createElement("code");
      kind.textContent = type || "";
      var state = document.createElement("span");
      state.className = "status";
      li.appendChild(state);
      li.appendChild(label);
      li.appendChild(kind);
      steps.appendChild(li);
      lines[urn] = li;
      return li;
    }

    source.addEventListener("idle", function () {
      setStatus("No update is running.", "idle");
    });
    source.addEventListener("update", function (e) {
      var u = JSON.parse(e.data);
      steps.textContent = "";
      lines = {};
      section.setAttribute("data-update", u.updateID);
      setStatus("Running: " + u.kind + " by " + u.holder, "running");
    });
    source.addEventListener("step", function (e) {
      var s = JSON.parse(e.data);
      if (!s.urn) {
        return;
      }
      var li = line(s.urn, s.name, s.type);
      li.setAttribute("data-status", s.status);
      li.className = "step " + (s.kind === "Begin" ? "working" : s.kind === "Failure" ? "failed" : "done");
      li.querySelector(".status").textContent = s.status;
    });
    source.addEventListener("end", function (e) {
      var u = JSON.parse(e.data);
      var outcome = u.result || u.status;
      setStatus("The update ended: " + outcome + ". Reload the page for its outputs and history.", "ended " + outcome);
    });
    source.addEventListener("gone", function () {
      setStatus("This stack no longer exists.", "ended");
      source.close();
    });
  }

  // The resource filter: rows whose type or name contains the text.
  function filter() {
    var input = document.getElementById("filter");
    var table = document.getElementById("resources");
    if (!input || !table) {
      return;
    }
    var count = document.getElementById("shown-count");
    input.addEventListener("input", function () {
      var needle = input.value.trim().toLowerCase();
      var shown = 0;
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        var name = (row.getAttribute("data-name") || "").toLowerCase();
        var type = (row.getAttribute("data-type") || "").toLowerCase();
        var match = !needle || name.indexOf(needle) >= 0 || type.indexOf(needle) >= 0;
        row.hidden = !match;
        if (match) {
          shown += 1;
        }
      });
      count.textContent = String(shown);
    });
  }

  // The graph's nodes open their resource's page.
  function graph() {
    var drawing = document.getElementById("graph");
    if (!drawing) {
      return;
    }
    function open(e) {
      var node = e.target.closest("[data-href]");
      if (node) {
        window.location.href = node.getAttribute("data-href");
      }
    }
    drawing.addEventListener("click", open);
    drawing.addEventListener("keydown", function (e) {
      if (e.key === "Enter") {
        open(e);
      }
    });
    Array.prototype.forEach.call(drawing.querySelectorAll("[data-href]"), function (node) {
      node.setAttribute("tabindex", "0");
      node.setAttribute("role", "link");
      node.setAttribute("aria-label", node.getAttribute("data-urn"));
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    live();
    filter();
    graph();
  });
})();
