/* Static explorers of the book "Positional Encoding in Transformers".
 *
 * Each explorer (see posenc/interactive.py) is a plotly figure under plain HTML controls
 * (a group of toggle buttons, a range slider or a drop-down list per control) plus a JSON
 * block of precomputed frames. When a control changes, this script looks up the frame for
 * the current combination of control indices and applies it to the figure through
 * posenc-plotly.js (window.posencFigures), which fits it to the screen as it does the
 * figure. No kernel, no network.
 *
 * The controls work as soon as this script has run: a choice made before plotly.js has
 * drawn the figure is applied when it has. */
(function () {
  "use strict";

  function restyleGroups(traces) {
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

  /** The index of the value a control shows, read from its HTML. */
  function activeIndex(node) {
    var field = node.querySelector("input[type=range], select");
    if (field) { return Number(field.value); }
    var pressed = node.querySelector("button[aria-pressed=true]");
    return pressed ? Number(pressed.getAttribute("data-index")) : 0;
  }

  function wire(container) {
    var specNode = document.getElementById(container.getAttribute("data-spec"));
    if (!specNode || container.getAttribute("data-wired") || !window.posencFigures) { return; }
    var spec = JSON.parse(specNode.textContent);
    var nodes = spec.controls.map(function (control, i) {
      return container.querySelector('.posenc-control[data-control="' + i + '"]');
    });
    if (nodes.some(function (node) { return !node; })) { return; }
    container.setAttribute("data-wired", "1");
    var state = nodes.map(activeIndex);
    var requested = null;
    var pending = Promise.resolve();

    function show() {
      var index = 0;
      spec.controls.forEach(function (control, i) { index = index * control.size + state[i]; });
      requested = index;
      pending = pending.then(function () {
        return window.posencFigures.whenDrawn(spec.figure);
      }).then(function (gd) {
        // A slider dragged across several steps asks for several frames: draw only the last.
        if (requested !== index) { return null; }
        var frame = spec.frames[index];
        if (!frame) { return null; }
        return window.posencFigures.update(gd, restyleGroups(frame.traces || {}), frame.layout || {}).then(function () {
          // Which frame is shown; the site's browser checks read it after a tap or a click.
          container.setAttribute("data-frame", String(index));
        });
      }).catch(function (error) { console.error("posenc: explorer " + container.id + ": " + (error.message || error)); });
    }

    nodes.forEach(function (node, i) {
      var labels = spec.controls[i].labels || [];
      var range = node.querySelector("input[type=range]");
      var select = node.querySelector("select");
      if (range) {
        var output = node.querySelector("output");
        range.addEventListener("input", function () {
          state[i] = Number(range.value);
          var text = labels[state[i]] !== undefined ? labels[state[i]] : range.value;
          if (output) { output.textContent = text; }
          range.setAttribute("aria-valuetext", text);
          show();
        });
      } else if (select) {
        select.addEventListener("change", function () { state[i] = Number(select.value); show(); });
      } else {
        node.querySelectorAll("button[data-index]").forEach(function (button) {
          button.addEventListener("click", function () {
            node.querySelectorAll("button[data-index]").forEach(function (other) {
              other.setAttribute("aria-pressed", String(other === button));
            });
            state[i] = Number(button.getAttribute("data-index"));
            show();
          });
        });
      }
    });
  }

  function wireAll() {
    document.querySelectorAll(".posenc-explorer").forEach(wire);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", wireAll);
  } else {
    wireAll();
  }
})();
