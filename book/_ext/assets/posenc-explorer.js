/* Static explorers of the book "Positional Encoding in Transformers".
 *
 * Each explorer is a plotly figure whose sliders/buttons use method "skip" plus a JSON
 * block of precomputed frames (see posenc/interactive.py). When a control moves, this
 * script looks up the frame for the current combination of control indices and applies
 * it with Plotly.update. No kernel, no network. */
(function () {
  "use strict";

  function restyleArgs(traces) {
    // {"0": {z: ...}, "2": {x: ..., y: ...}} -> one Plotly.update per distinct key set.
    var groups = {};
    Object.keys(traces).forEach(function (index) {
      var props = traces[index];
      var key = Object.keys(props).sort().join("|");
      if (!groups[key]) { groups[key] = { indices: [], props: {} }; }
      var group = groups[key];
      group.indices.push(Number(index));
      Object.keys(props).forEach(function (name) {
        (group.props[name] = group.props[name] || []).push(props[name]);
      });
    });
    return Object.keys(groups).map(function (k) { return groups[k]; });
  }

  function wire(container) {
    var specNode = document.getElementById(container.getAttribute("data-spec"));
    if (!specNode || container.getAttribute("data-wired")) { return; }
    var spec = JSON.parse(specNode.textContent);
    var gd = document.getElementById(spec.figure);
    if (!gd || typeof gd.on !== "function") { return; }
    container.setAttribute("data-wired", "1");
    var state = spec.controls.map(function (control, i) {
      var layout = gd.layout || {};
      var list = control.kind === "slider" ? layout.sliders : layout.updatemenus;
      var found = (list || []).filter(function (c) { return c.name === control.name; })[0];
      return found && typeof found.active === "number" ? found.active : 0;
    });

    function show() {
      var index = 0;
      spec.controls.forEach(function (control, i) { index = index * control.size + state[i]; });
      var frame = spec.frames[index];
      if (!frame) { return; }
      var groups = restyleArgs(frame.traces || {});
      var layout = frame.layout || {};
      if (groups.length === 0) {
        Plotly.relayout(gd, layout);
      } else {
        groups.forEach(function (group, i) {
          Plotly.update(gd, group.props, i === 0 ? layout : {}, group.indices);
        });
      }
      // Which frame is shown; the site's browser checks read it after a click.
      container.setAttribute("data-frame", String(index));
    }

    function controlIndex(name, kind) {
      for (var i = 0; i < spec.controls.length; i++) {
        if (spec.controls[i].name === name && spec.controls[i].kind === kind) { return i; }
      }
      return -1;
    }

    gd.on("plotly_sliderchange", function (event) {
      var i = controlIndex(event.slider.name, "slider");
      if (i < 0) { return; }
      state[i] = event.slider.active;
      show();
    });
    gd.on("plotly_buttonclicked", function (event) {
      var i = controlIndex(event.menu.name, "buttons");
      if (i < 0) { return; }
      state[i] = event.active;
      show();
    });
  }

  function wireAll() {
    if (typeof window.Plotly === "undefined") { return; }
    document.querySelectorAll(".posenc-explorer").forEach(wire);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", wireAll);
  } else {
    wireAll();
  }
  window.addEventListener("load", wireAll);
})();
