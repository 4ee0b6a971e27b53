/* Figures of the book "Positional Encoding in Transformers": plotly.js without blocking
 * the first paint, and every figure fitted to the reader's screen.
 *
 * Loaded (synchronously, it is small) in the <head> of every page that shows a figure,
 * before the figures' own inline scripts. Those call Plotly.newPlot while the page is
 * parsed; until plotly.js (4.8 MB) has arrived, `window.Plotly` is a stand-in that queues
 * the calls. plotly.js is preloaded at once and run after the first paint, then the queued
 * figures are drawn, those in view first, one per task so the page stays responsive.
 * Offline: plotly.js is the copy next to this file (book/_ext/posenc_site.py puts it there).
 *
 * Each figure is adapted before it is drawn (and again when the window crosses a size):
 *   - touch screens: no zoom or pan by dragging (dragmode false, no scroll zoom), so a drag
 *     on a figure scrolls the page; zooming stays available from the mode bar's buttons;
 *   - a narrow column (< NARROW_PX): side-by-side subplots are stacked, legends and colour
 *     bars move where they fit;
 *   - at any width: a title, x-axis title or note that plotly would clip at the figure's edge
 *     wraps onto more lines (plotly never wraps text itself).
 * Otherwise a desktop figure is drawn exactly as the page gives it.
 *
 * window.posencFigures is what the explorer script (posenc-explorer.js) uses:
 *   whenDrawn(id) -> Promise of the figure's div once it is drawn;
 *   update(gd, traceGroups, layoutPatch) -> applies one explorer frame, adapted the same way.
 * If plotly.js was already on the page (loaded by another script), figures are drawn by
 * their inline scripts as they come, unadapted, and both functions still work. */
(function () {
  "use strict";
  if (window.posencFigures) { return; }

  /** Below this width (px) of its column a figure uses the compact layout. */
  var NARROW_PX = 560;
  /** Height (px) kept for each subplot when subplots are stacked. */
  var STACKED_CELL_PX = 260;
  /** A figure is fitted again when its column's width changed by this much (px). */
  var REFIT_PX = 16;
  /** Room (px) a figure's title leaves at its sides. */
  var TITLE_INSET_PX = 40;
  /** Height (px) of one row of a legend under the plot, and the width of an entry's symbol and gaps. */
  var LEGEND_ROW_PX = 22;
  var LEGEND_SYMBOL_PX = 48;
  /** A legend inside the plot moves under it when an entry takes more than this share of the plot's width. */
  var INSIDE_LEGEND_SHARE = 0.6;
  /** Width (px) of the mode bar's three zoom buttons on a touch screen. */
  var MODEBAR_PX = 80;
  /** Room (px) above a title hung from the top of a narrow figure. */
  var TITLE_TOP_PX = 14;
  /** Height (px) of a subplot's title line. */
  var SUBPLOT_TITLE_PX = 26;
  /** Room (px) between stacked subplots: the upper one's tick labels and axis title, the lower one's title. */
  var STACKED_GAP_PX = 86;

  var PLOTLY_URL = (function () {
    var script = document.currentScript;
    return script && script.src ? new URL("plotly.min.js", script.src).href : "plotly.min.js";
  })();
  var preloaded = typeof window.Plotly === "object" && typeof window.Plotly.react === "function";
  var queue = [];          // arguments of the figures' Plotly.newPlot calls, in page order
  var records = {};        // figure id -> {gd, layout (the page's, with explorer frames applied), originals, config, ...}
  var drawnWaiters = {};   // figure id -> [resolve functions]
  var drawnIds = {};       // figure id -> true once drawn
  var loading = null;

  // -- small helpers ------------------------------------------------------------------
  function clone(value) { return value === undefined ? undefined : JSON.parse(JSON.stringify(value)); }

  function setPath(target, path, value) {
    var keys = path.split(".");
    var node = target;
    for (var i = 0; i < keys.length - 1; i++) {
      if (typeof node[keys[i]] !== "object" || node[keys[i]] === null) { node[keys[i]] = {}; }
      node = node[keys[i]];
    }
    node[keys[keys.length - 1]] = value;
  }

  function getPath(source, path) {
    return path.split(".").reduce(function (node, key) { return node == null ? undefined : node[key]; }, source);
  }

  function isTouch() {
    return window.matchMedia ? window.matchMedia("(pointer: coarse)").matches : false;
  }

  function columnWidth(gd) {
    if (gd.clientWidth > 0) { return gd.clientWidth; }
    var article = document.querySelector(".bd-article") || document.body;  // a figure in a closed <details>
    return article.clientWidth || window.innerWidth;
  }

  // -- text that has to fit --------------------------------------------------------------
  var measureContext = null;

  function textWidth(text, sizePx, family) {
    measureContext = measureContext || document.createElement("canvas").getContext("2d");
    measureContext.font = sizePx + "px " + (family || "sans-serif");
    return measureContext.measureText(text).width;
  }

  function plainText(text) { return String(text).replace(/<[^>]*>/g, ""); }

  /** `text` with <br> inserted between words so that no line is wider than `maxPx`. Lines the
   * author broke stay broken; a single word longer than the line stays whole. */
  function wrapText(text, maxPx, sizePx, family) {
    if (typeof text !== "string" || !text) { return text; }
    return text.split(/<br\s*\/?>/i).map(function (line) {
      if (textWidth(plainText(line), sizePx, family) <= maxPx) { return line; }
      var out = [], current = "";
      line.split(" ").forEach(function (word) {
        var candidate = current ? current + " " + word : word;
        if (current && textWidth(plainText(candidate), sizePx, family) > maxPx) {
          out.push(current);
          current = word;
        } else {
          current = candidate;
        }
      });
      if (current) { out.push(current); }
      return out.join("<br>");
    }).join("<br>");
  }

  function lineCount(text) { return typeof text === "string" ? text.split(/<br\s*\/?>/i).length : 0; }

  /** Font size and family plotly will use for a text: its own font, else the template's, else plotly's default. */
  function fontOf(layout, path, scale) {
    var template = (layout.template && layout.template.layout) || {};
    var base = layout.font || {}, templateBase = template.font || {};
    var own = getPath(layout, path + ".font") || {}, templateOwn = getPath(template, path + ".font") || {};
    var size = own.size || templateOwn.size || (base.size || templateBase.size || 12) * (scale || 1);
    var family = own.family || templateOwn.family || base.family || templateBase.family || "sans-serif";
    return {size: size, family: family};
  }

  // -- the compact layout ------------------------------------------------------------------
  function axisKeys(layout, letter) {
    return Object.keys(layout).filter(function (key) { return new RegExp("^" + letter + "axis\\d*$").test(key); });
  }

  function axisKeyOf(ref, letter) {  // "x2" -> "xaxis2", undefined -> "xaxis"
    var suffix = ref ? String(ref).slice(1) : "";
    return letter + "axis" + suffix;
  }

  function domainOf(layout, key) {
    var axis = layout[key] || {};
    return Array.isArray(axis.domain) ? axis.domain : [0, 1];
  }

  /** The subplots as cells {x, y} (layout axis keys), in reading order: rows from the top,
   * left to right. Only cartesian subplots that have a trace or an axis anchor count. */
  function cells(layout, data) {
    var found = {}, list = [];
    function add(xKey, yKey) {
      var id = xKey + "|" + yKey;
      if (!found[id]) { found[id] = true; list.push({x: xKey, y: yKey}); }
    }
    data.forEach(function (trace) {
      var type = trace.type || "scatter";
      if (type === "pie" || type === "table") { return; }
      add(axisKeyOf(trace.xaxis, "x"), axisKeyOf(trace.yaxis, "y"));
    });
    axisKeys(layout, "x").forEach(function (xKey) {
      var anchor = layout[xKey] && layout[xKey].anchor;
      if (anchor && /^y\d*$/.test(anchor)) { add(xKey, axisKeyOf(anchor, "y")); }
    });
    list.forEach(function (cell) {
      cell.xDomain = domainOf(layout, cell.x);
      cell.yDomain = domainOf(layout, cell.y);
    });
    list.sort(function (a, b) { return (b.yDomain[1] - a.yDomain[1]) || (a.xDomain[0] - b.xDomain[0]); });
    return list;
  }

  /** Room (px) the titles of the top subplot need above it: subplot titles are notes anchored
   * at the top of their subplot (make_subplots' subplot_titles). */
  function subplotTitleRoom(layout, topCell) {
    var titled = (layout.annotations || []).some(function (note) {
      return note.xref === "paper" && note.yref === "paper" && note.yanchor === "bottom"
        && Math.abs(note.y - topCell.newY[1]) < 0.02;
    });
    return titled ? SUBPLOT_TITLE_PX : 0;
  }

  function columnsOf(cellList) {
    var lefts = {};
    cellList.forEach(function (cell) { lefts[cell.xDomain[0].toFixed(3)] = true; });
    return Object.keys(lefts).length;
  }

  /** Paper coordinates inside an old cell, mapped into the same place of its new cell. */
  function remap(value, from, to) {
    var span = from[1] - from[0];
    return span > 0 ? to[0] + (value - from[0]) / span * (to[1] - to[0]) : value;
  }

  function cellAt(cellList, x, y) {
    for (var i = 0; i < cellList.length; i++) {
      var c = cellList[i];
      var inX = x >= c.xDomain[0] - 1e-6 && x <= c.xDomain[1] + 1e-6;
      var nearY = y >= c.yDomain[0] - 1e-6 && y <= c.yDomain[1] + 0.12;  // subplot titles sit just above
      if (inX && nearY) { return c; }
    }
    return null;
  }

  /** Stack side-by-side subplots into one column; returns the new figure height. Moves each
   * subplot's paper-anchored annotations (titles) and shapes with it, and places each
   * heatmap's colour bar beside its own subplot. */
  function stackSubplots(layout, data, colorbars, cellList, margin) {
    var cellPx = cellList.map(function (cell) {
      var oldPx = ((layout.height || 450) - margin.t - margin.b) * (cell.yDomain[1] - cell.yDomain[0]);
      return Math.max(STACKED_CELL_PX, Math.min(oldPx, 360));
    });
    var plotPx = cellPx.reduce(function (a, b) { return a + b; }, 0) + STACKED_GAP_PX * (cellList.length - 1);
    var top = 0;
    cellList.forEach(function (cell, i) {
      cell.newX = [0, 1];
      cell.newY = [1 - (top + cellPx[i]) / plotPx, 1 - top / plotPx];
      top += cellPx[i] + STACKED_GAP_PX;
    });
    (layout.annotations || []).forEach(function (note) {
      if (note.xref !== "paper" || note.yref !== "paper") { return; }
      var cell = cellAt(cellList, note.x, note.y);
      if (!cell) { return; }
      note.x = remap(note.x, cell.xDomain, cell.newX);
      note.y = remap(note.y, cell.yDomain, cell.newY);
    });
    (layout.shapes || []).forEach(function (shape) {
      if (shape.xref === "paper" && shape.yref === "paper") {
        var cell = cellAt(cellList, shape.x0, shape.y0);
        if (!cell) { return; }
        ["x0", "x1"].forEach(function (k) { shape[k] = remap(shape[k], cell.xDomain, cell.newX); });
        ["y0", "y1"].forEach(function (k) { shape[k] = remap(shape[k], cell.yDomain, cell.newY); });
      }
    });
    cellList.forEach(function (cell) {
      layout[cell.x] = layout[cell.x] || {};
      layout[cell.y] = layout[cell.y] || {};
      layout[cell.x].domain = cell.newX;
      layout[cell.y].domain = cell.newY;
      // Axes shared across a row or a column showed their labels once; each subplot now has its own row.
      [cell.x, cell.y].forEach(function (key) {
        if (layout[key].matches && layout[key].showticklabels === false) { layout[key].showticklabels = true; }
      });
    });
    data.forEach(function (trace, index) {
      if (!colorbars[index]) { return; }
      var cell = null;
      var xKey = axisKeyOf(trace.xaxis, "x"), yKey = axisKeyOf(trace.yaxis, "y");
      cellList.forEach(function (c) { if (c.x === xKey && c.y === yKey) { cell = c; } });
      if (!cell) { return; }
      colorbars[index].y = (cell.newY[0] + cell.newY[1]) / 2;
      colorbars[index].yanchor = "middle";
      colorbars[index].len = cell.newY[1] - cell.newY[0];
      colorbars[index].lenmode = "fraction";
      colorbars[index].x = 1.02;
      colorbars[index].xanchor = "left";
    });
    return margin.t + margin.b + plotPx;
  }

  /** How many rows a legend drawn under the plot needs, or 0 if the legend stays where it is
   * (no legend, or one placed inside the plot by the figure). */
  function legendRowsUnder(layout, data, widthPx) {
    var legend = layout.legend || {};
    var entries = data.filter(function (trace) {
      var type = trace.type || "scatter";
      return trace.showlegend !== false && trace.name && type !== "heatmap" && type !== "contour";
    });
    var shown = layout.showlegend === true || (layout.showlegend !== false && entries.length > 1);
    if (!shown || !entries.length) { return 0; }
    var font = fontOf(layout, "legend", 1);
    // A legend inside the plot stays there if it leaves the plot some room.
    var inside = legend.x !== undefined && legend.x >= 0 && legend.x < 1 && legend.y !== undefined && legend.y >= 0 && legend.y <= 1;
    var widest = Math.max.apply(null, entries.map(function (trace) {
      return textWidth(plainText(trace.name), font.size, font.family) + LEGEND_SYMBOL_PX;
    }));
    if (inside && widest < INSIDE_LEGEND_SHARE * widthPx) { return 0; }
    var rows = 1, used = 0;
    entries.forEach(function (trace) {
      var entryPx = textWidth(plainText(trace.name), font.size, font.family) + LEGEND_SYMBOL_PX;
      if (used && used + entryPx > widthPx) { rows += 1; used = 0; }
      used += entryPx;
    });
    return rows;
  }

  function hasColorbar(trace) {
    var type = trace.type || "scatter";
    var scaled = type === "heatmap" || type === "contour" || type === "histogram2d";
    return scaled && trace.showscale !== false && !trace.coloraxis;
  }

  /** The layout (and the traces' colour bars) for a column `width` px wide. Pure: `layout`
   * and `data` are not changed. */
  function compact(layout, data, width, originals) {
    var out = clone(layout);
    var template = (out.template && out.template.layout) || {};
    var margin = {
      t: getPath(out, "margin.t") || getPath(template, "margin.t") || 80,
      b: getPath(out, "margin.b") || getPath(template, "margin.b") || 80,
      l: getPath(out, "margin.l") || getPath(template, "margin.l") || 80,
      r: getPath(out, "margin.r") || getPath(template, "margin.r") || 80,
    };
    margin.l = Math.min(margin.l, 56);
    margin.r = Math.min(margin.r, 16);
    var colorbars = originals.map(function (original) {
      if (original.colorbar === undefined) { return null; }
      var bar = clone(original.colorbar);
      bar.thickness = Math.min(bar.thickness || 30, 14);
      if (bar.title && bar.title.text) { bar.title.side = "right"; }  // along the bar, not across the plot's width
      return bar;
    });
    var cellList = cells(out, data);
    var topRoom = 0;
    if (columnsOf(cellList) > 1) {
      out.height = stackSubplots(out, data, colorbars, cellList, margin);
      topRoom = subplotTitleRoom(out, cellList[0]);
    }
    // Legends beside the plot take half a phone's width: put them under it, in rows. A figure
    // with a legend per subplot gets one legend for all, under the plot.
    var legendRows = legendRowsUnder(out, data, width - margin.l - margin.r);
    var merged = legendRows > 0 ? mergeLegends(out, data) : data.map(function () { return null; });
    if (legendRows > 0) {
      var legend = out.legend = out.legend || {};
      legend.orientation = "h";
      legend.x = 0; legend.xanchor = "left";
      legend.yref = "container"; legend.y = 0; legend.yanchor = "bottom";
      out.height = (out.height || 450) + LEGEND_ROW_PX * legendRows;
      margin.b = margin.b + LEGEND_ROW_PX * legendRows;
    }
    out.margin = Object.assign({}, out.margin, margin);
    var traces = data.map(function (trace, i) {
      var changes = {};
      if (colorbars[i]) { changes.colorbar = colorbars[i]; }
      if (merged[i]) { changes.legend = merged[i]; }
      return Object.keys(changes).length ? changes : null;
    });
    return {layout: out, traces: traces, topRoom: topRoom};
  }

  /** Point every trace at the first legend and drop the others (legend2, legend3, ...); returns
   * the new `legend` of each trace that had another one (null for the others). Changes `layout`. */
  function mergeLegends(layout, data) {
    var others = Object.keys(layout).filter(function (key) { return /^legend\d+$/.test(key); });
    others.forEach(function (key) { delete layout[key]; });
    return data.map(function (trace) { return trace.legend && trace.legend !== "legend" ? "legend" : null; });
  }

  /** Wrap the figure's title to the figure's width (at any width: plotly clips a long title);
   * the top margin, and the figure, grow by what the title needs. In a narrow column the
   * title hangs from the top, left-aligned, above `topRoom` px kept for the first subplots'
   * titles. Changes `layout`. */
  function fitTitle(layout, width, narrow, topRoom) {
    var title = layout.title = typeof layout.title === "string" ? {text: layout.title} : (layout.title || {});
    var template = (layout.template && layout.template.layout) || {};
    var top = getPath(layout, "margin.t") || getPath(template, "margin.t") || 80;
    var font = fontOf(layout, "title", 1.4);
    var lineHeight = font.size * 1.3;
    var before = lineCount(title.text);
    // On a touch screen the mode bar (three buttons) stays in the top right corner: keep clear of it.
    var room = width - TITLE_INSET_PX - (narrow && isTouch() ? MODEBAR_PX : 0);
    if (title.text) { title.text = wrapText(title.text, room, font.size, font.family); }
    var need = top;
    if (narrow) {
      if (title.text) {
        // Hung from the top of the figure (plotly aligns a title of several lines by its first).
        Object.assign(title, {x: 0.02, xanchor: "left", yref: "container", y: 1, yanchor: "top",
                              pad: {t: TITLE_TOP_PX, b: 0, l: 0, r: 0}});
      }
      need = Math.max(top, Math.round(TITLE_TOP_PX + lineCount(title.text) * lineHeight + 10 + topRoom));
    } else if (title.text) {
      need = top + Math.round((lineCount(title.text) - before) * lineHeight);
    }
    if (need === top) { return; }
    layout.margin = Object.assign({}, layout.margin, {t: need});
    if (layout.height) { layout.height += need - top; }
  }

  /** What to draw for a figure's record at its column's current width. */
  function adapted(record, data) {
    var width = columnWidth(record.gd);
    record.width = width;
    record.narrow = width < NARROW_PX;
    var layout = clone(record.layout);
    var changes = data.map(function () { return null; });
    var topRoom = 0;
    if (record.narrow) {
      var result = compact(layout, data, width, record.originals);
      layout = result.layout;
      changes = result.traces;
      topRoom = result.topRoom;
    }
    fitTitle(layout, width, record.narrow, topRoom);
    if (record.touch) { layout.dragmode = false; }
    // Each trace as the page gave it (what an earlier fit changed is put back), then this fit's changes.
    var traces = data.map(function (trace, i) {
      var original = record.originals[i];
      if (!Object.keys(original).length && !changes[i]) { return trace; }
      var out = Object.assign({}, trace);
      Object.keys(original).forEach(function (key) {
        if (original[key] === undefined) { delete out[key]; } else { out[key] = clone(original[key]); }
      });
      return Object.assign(out, changes[i] || {});
    });
    return {data: traces, layout: layout};
  }

  /** What a fit may change in a trace, as the page gave it: its colour bar and its legend. */
  function traceOriginals(trace) {
    var original = {};
    if (hasColorbar(trace)) { original.colorbar = clone(trace.colorbar) || {}; }
    if ("legend" in trace) { original.legend = trace.legend; }
    return original;
  }

  /** plotly's HTML gives each figure a box of the figure's height; a compact figure may be taller. */
  function fitBox(record, layout) {
    var box = record.gd.parentElement;
    if (!box || !record.boxHeight || !/px$/.test(record.boxHeight)) { return; }
    var changed = layout.height && layout.height !== record.layout.height;
    box.style.height = changed ? layout.height + "px" : record.boxHeight;
  }

  function adaptedConfig(config) {
    var out = Object.assign({}, config || {});
    if (isTouch()) {
      // A touch screen shows the mode bar all the time: keep only the explicit zoom buttons.
      out.scrollZoom = false;
      out.modeBarButtons = [["zoomIn2d", "zoomOut2d", "resetScale2d"]];
    }
    return out;
  }

  /** After drawing: x-axis titles and free-standing notes that plotly drew past the figure's
   * edges are wrapped to the room plotly actually gave them (one relayout, only if needed).
   * Texts come from the record (the page's, not an earlier fit). */
  function fitDrawnTexts(record) {
    var gd = record.gd, full = gd._fullLayout;
    if (!full || !gd.clientWidth) { return Promise.resolve(); }
    var box = gd.getBoundingClientRect();
    var cut = function (node) {
      var r = node.getBoundingClientRect();
      return r.width > 0 && (r.left < box.left - 1 || r.right > box.right + 1);
    };
    var patch = {};
    Object.keys(full).filter(function (key) { return /^xaxis\d*$/.test(key); }).forEach(function (key) {
      var axis = full[key], text = getPath(record.layout, key + ".title.text");
      var node = gd.querySelector("g.g-" + axis._id + "title text");
      if (text && node && cut(node)) {
        patch[key + ".title.text"] = wrapText(text, axis._length - 8, axis.title.font.size, axis.title.font.family);
      }
    });
    (full.annotations || []).forEach(function (note, i) {
      var text = getPath(record.layout, "annotations") && record.layout.annotations[i] && record.layout.annotations[i].text;
      var node = gd.querySelector('g.annotation[data-index="' + i + '"] text');
      if (text && node && note.showarrow === false && cut(node)) {
        // Narrower by what sticks out, on both sides: notes are mostly centred (subplot titles).
        var r = node.getBoundingClientRect();
        var over = Math.max(box.left - r.left, r.right - box.right);
        var limit = Math.max(r.width - 2 * over - 8, 40);
        patch["annotations[" + i + "].text"] = wrapText(text, limit, note.font.size, note.font.family);
      }
    });
    Object.keys(patch).forEach(function (path) {
      if (patch[path] === getPath(gd.layout, path.replace(/\[(\d+)\]/g, ".$1"))) { delete patch[path]; }
    });
    return Object.keys(patch).length ? window.Plotly.relayout(gd, patch) : Promise.resolve();
  }

  /** Fit the texts once plotly has finished a burst of draws (a draw may trigger another). */
  function scheduleFit(record) {
    clearTimeout(record.fitTimer);
    record.fitTimer = setTimeout(function () { fitDrawnTexts(record); }, 50);
  }

  // -- drawing -----------------------------------------------------------------------------
  function drawn(id) {
    drawnIds[id] = true;
    (drawnWaiters[id] || []).forEach(function (resolve) { resolve(document.getElementById(id)); });
    delete drawnWaiters[id];
  }

  function draw(call) {
    var id = call[0], data = call[1] || [], layout = call[2] || {}, config = call[3] || {};
    var gd = typeof id === "string" ? document.getElementById(id) : id;
    if (!gd) { return Promise.resolve(); }
    var record = records[gd.id] = {
      gd: gd,
      layout: clone(layout),
      originals: data.map(traceOriginals),
      config: adaptedConfig(config),
      touch: isTouch(),
      narrow: false,
    };
    var figure = adapted(record, data);
    record.boxHeight = gd.parentElement ? gd.parentElement.style.height : "";
    fitBox(record, figure.layout);
    return window.Plotly.newPlot(gd, figure.data, figure.layout, record.config).then(function () {
      // plotly may draw again once margins settle (legends, tick labels): fit after every draw.
      gd.on("plotly_afterplot", function () { scheduleFit(record); });
      return fitDrawnTexts(record);
    }).then(function () { drawn(gd.id); });
  }

  function inView(call) {
    var gd = document.getElementById(call[0]);
    if (!gd) { return false; }
    var box = gd.getBoundingClientRect();
    return box.bottom > 0 && box.top < window.innerHeight;
  }

  function drawQueue() {
    var calls = queue.splice(0, queue.length);
    var first = calls.filter(inView), rest = calls.filter(function (call) { return !inView(call); });
    var order = first.concat(rest);
    return order.reduce(function (previous, call) {
      return previous.then(function () {
        return new Promise(function (resolve) { setTimeout(resolve, 0); });  // yield between figures
      }).then(function () {
        return draw(call).catch(function (error) { console.error("posenc: figure " + call[0] + " failed to draw", error); });
      });
    }, Promise.resolve());
  }

  function loadPlotly() {
    if (!loading) {
      // When plotly.js was asked for (ms since navigation): the site's checks compare it with the first paint.
      window.posencFigures.plotlyRequestedAt = performance.now();
      loading = new Promise(function (resolve, reject) {
        var script = document.createElement("script");
        script.src = PLOTLY_URL;
        script.onload = function () { resolve(window.Plotly); };
        script.onerror = function () { reject(new Error("posenc: plotly.js did not load from " + PLOTLY_URL)); };
        document.head.appendChild(script);
      });
    }
    return loading;
  }

  /** Run `callback` once the page has painted: a task queued from requestAnimationFrame runs
   * after the frame it precedes. The timer is the fallback of a page in a hidden tab. */
  function afterFirstPaint(callback) {
    var done = false;
    function once() { if (!done) { done = true; callback(); } }
    window.requestAnimationFrame(function () { setTimeout(once, 0); });
    setTimeout(once, 1000);
  }

  function start() {
    if (!queue.length) { return; }
    afterFirstPaint(function () {
      loadPlotly().then(drawQueue).then(function () {
        window.posencFigures.drawnAt = performance.now();
      }).catch(function (error) { console.error(error.message || error); });
    });
  }

  // -- window size changes -----------------------------------------------------------------
  var resizeTimer = null;

  function refit() {
    Object.keys(records).forEach(function (id) {
      var record = records[id];
      var width = columnWidth(record.gd);
      if (!record.gd._fullLayout || Math.abs(width - record.width) < REFIT_PX) { return; }
      var figure = adapted(record, record.gd.data);
      fitBox(record, figure.layout);
      window.Plotly.react(record.gd, figure.data, figure.layout, record.config).then(function () {
        return fitDrawnTexts(record);
      });
    });
  }

  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(refit, 150);
  });

  // -- the explorers' entry points --------------------------------------------------------

  /** A Promise of the figure's div once it is drawn (at once if it is). */
  function whenDrawn(id) {
    var gd = document.getElementById(id);
    if (gd && (drawnIds[id] || (preloaded && gd._fullLayout))) { return Promise.resolve(gd); }
    return new Promise(function (resolve) {
      (drawnWaiters[id] = drawnWaiters[id] || []).push(resolve);
      if (preloaded) {  // drawn by its own inline script: look until it is
        var timer = setInterval(function () {
          var node = document.getElementById(id);
          if (node && node._fullLayout) { clearInterval(timer); drawn(id); }
        }, 100);
      }
    });
  }

  /** Apply one explorer frame: `traceGroups` [{indices, props}] (props: name -> one value per
   * index) and `layoutPatch` (flat plotly paths). The figure's own record learns the patch,
   * so a later refit keeps it; texts in the patch are fitted like the figure's. */
  function update(gd, traceGroups, layoutPatch) {
    var record = records[gd.id];
    var patch = Object.assign({}, layoutPatch || {});
    if (record) {
      Object.keys(patch).forEach(function (path) { setPath(record.layout, path, clone(patch[path])); });
      var fitted = adapted(record, gd.data).layout;
      Object.keys(patch).forEach(function (path) {
        if (/(^|\.)title\.text$/.test(path)) { patch[path] = getPath(fitted, path); }
      });
      if (getPath(fitted, "margin.t")) { patch["margin.t"] = getPath(fitted, "margin.t"); }
      if (fitted.height) { patch.height = fitted.height; }
      fitBox(record, fitted);
    }
    var done = !traceGroups.length ? window.Plotly.relayout(gd, patch) : traceGroups.reduce(function (previous, group, i) {
      return previous.then(function () { return window.Plotly.update(gd, group.props, i === 0 ? patch : {}, group.indices); });
    }, Promise.resolve());
    return record ? done.then(function () { return fitDrawnTexts(record); }) : done;
  }

  window.posencFigures = {
    whenDrawn: whenDrawn, update: update, NARROW_PX: NARROW_PX,
    compact: compact, traceOriginals: traceOriginals,  // for the site's tests
    plotlyRequestedAt: null, drawnAt: null,
  };

  if (preloaded) { return; }
  var link = document.createElement("link");
  link.rel = "preload";
  link.as = "script";
  link.href = PLOTLY_URL;
  document.head.appendChild(link);
  window.Plotly = {
    // The figures' inline scripts call this while the page is parsed (see the top).
    newPlot: function () { queue.push(Array.prototype.slice.call(arguments)); return Promise.resolve(); },
  };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
