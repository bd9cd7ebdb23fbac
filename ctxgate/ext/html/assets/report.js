/* ctxgate HTML report: opens a case's samples when its link is followed (#case/TASK/LENGTH). The samples travel in
   the page as gzip-compressed JSON (base64) and are unpacked with the browser's own DecompressionStream; every
   text is set with textContent, never parsed as HTML. */
(function () {
  "use strict";
  var payload = null;
  var state = { key: null, sort: "i", dir: 1, show: "all" };
  var RIGHT = 0.5;

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    (children || []).forEach(function (c) {
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }

  function load() {
    if (payload) { return Promise.resolve(payload); }
    var text = document.getElementById("ctxgate-samples").textContent.trim();
    var binary = atob(text);
    var bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) { bytes[i] = binary.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(function (t) { payload = JSON.parse(t); return payload; });
  }

  function pct(score) { return score === null || score === undefined ? "" : (100 * score).toFixed(0); }

  function highlighted(text, needle) {
    var at = needle ? text.indexOf(needle) : -1;
    if (at < 0) { return [text]; }
    return [text.slice(0, at), el("mark", {}, [needle]), text.slice(at + needle.length)];
  }

  function excerptCell(x) {
    var cell = el("td", {});
    if (!x) { return cell; }
    (x.needles || []).forEach(function (n) {
      var depth = n.depth === null || n.depth === undefined ? "" : "depth " + n.depth + "%: ";
      cell.appendChild(el("span", { "class": "excerpt" },
        [el("span", { "class": "depth" }, [depth]), "…"].concat(highlighted(n.text, n.needle), ["…"])));
    });
    return cell;
  }

  function visible(rows) {
    var shown = rows.filter(function (r) {
      if (state.show === "right") { return r.s !== null && r.s >= RIGHT; }
      if (state.show === "wrong") { return r.s !== null && r.s < RIGHT; }
      if (state.show === "unscored") { return r.s === null; }
      return true;
    });
    var key = state.sort;
    return shown.sort(function (a, b) {
      var x = a[key] === null || a[key] === undefined ? -1 : a[key];
      var y = b[key] === null || b[key] === undefined ? -1 : b[key];
      return (x < y ? -1 : x > y ? 1 : a.i - b.i) * state.dir;
    });
  }

  function header(label, key) {
    if (!key) { return el("th", { scope: "col" }, [label]); }
    var sorted = state.sort === key;
    var th = el("th", { scope: "col", "aria-sort": sorted ? (state.dir > 0 ? "ascending" : "descending") : "none" });
    var button = el("button", { type: "button", "data-sort": key }, [label + (sorted ? (state.dir > 0 ? " ▲" : " ▼") : "")]);
    button.addEventListener("click", function () {
      state.dir = state.sort === key ? -state.dir : 1;
      state.sort = key;
      draw('button[data-sort="' + key + '"]');
    });
    th.appendChild(button);
    return th;
  }

  function table(rows) {
    var body = el("tbody", {}, visible(rows).map(function (r) {
      return el("tr", { "data-index": String(r.i) }, [
        el("th", { scope: "row" }, [String(r.i)]),
        el("td", { "class": "num" }, [pct(r.s) + (r.e ? " (judge: " + r.e + ")" : "")]),
        el("td", {}, r.th === null || r.th === undefined ? [r.p || ""] : [
          r.p || "(no answer)",
          el("details", {}, [el("summary", {}, ["thought: " + r.tt + " tokens, ended by " + r.te]), r.th])
        ]),
        el("td", {}, [(r.a || []).join(" | ")]),
        excerptCell(r.x),
        el("td", {}, [r.x && r.x.end ? "…" + r.x.end : ""]),
        el("td", { "class": "num" }, [r.o === null || r.o === undefined ? "" : String(r.o)]),
        el("td", { "class": "num" }, [r.t === null || r.t === undefined ? "cached" : r.t.toFixed(2)])
      ]);
    }));
    var head = el("thead", {}, [el("tr", {}, [
      header("#", "i"), header("score", "s"), header("prediction"), header("answer(s)"),
      header("needles in their context"), header("prompt's end"), header("output tokens", "o"), header("seconds", "t")
    ])]);
    return el("table", { "class": "samples" }, [el("caption", {}, ["Samples (scores in percent; sort by a column's button)"]), head, body]);
  }

  function facts(c) {
    var parts = [
      "verdict " + String(c.verdict).toUpperCase(),
      "score " + (c.score === null || c.score === undefined ? "none" : Number(c.score).toFixed(1)) +
        (c.ci ? " (interval " + c.ci[0] + " to " + c.ci[1] + ")" : ""),
      "n " + c.n, "floor " + c.floor,
      c.input_tokens_max ? "longest prompt " + c.input_tokens_max + " tokens" : "",
      c.fill_min ? "fill " + c.fill_min : "",
      c.seconds ? c.seconds + " s" : "",
      c.thinking ? "thought " + c.thinking.tokens_mean + " tokens per sample (max " + c.thinking.tokens_max +
        "), cut " + c.thinking.thought_cut + " thoughts, " + c.thinking.answer_cut + " answers, " +
        c.thinking.never_ended + " never ended" : ""
    ].filter(Boolean);
    var nodes = [el("p", { "class": "case-facts" }, [parts.join(" · ")]), el("p", {}, [c.message || ""])];
    if (c.baseline) { nodes.push(el("p", {}, ["Against the baseline: " + (c.baseline.message || "")])); }
    return nodes;
  }

  /* refocus: the control that asked for the redraw, which the redraw replaced (a keyboard user stays on it) */
  function draw(refocus) {
    var entry = payload.cases[state.key];
    var body = document.getElementById("drill-body");
    body.textContent = "";
    var c = entry.case;
    document.getElementById("drill-h").textContent = "Samples of " + c.task + " at " + c.length + " tokens";
    facts(c).forEach(function (n) { body.appendChild(n); });
    if (!entry.rows.length) {
      body.appendChild(el("p", {}, ["No sample of this case was recorded (it did not run, or its predictions file is not beside the report)."]));
      return;
    }
    var select = el("select", { id: "drill-show" }, ["all", "wrong", "right", "unscored"].map(function (v) {
      var o = el("option", { value: v }, [v]);
      if (v === state.show) { o.setAttribute("selected", ""); }
      return o;
    }));
    select.addEventListener("change", function () { state.show = select.value; draw("#drill-show"); });
    body.appendChild(el("div", { "class": "controls" }, [el("label", { "for": "drill-show" }, ["Show samples: "]), select]));
    body.appendChild(table(entry.rows));
    if (refocus) { body.querySelector(refocus).focus(); }
  }

  function route() {
    var hash = decodeURIComponent(location.hash.slice(1));
    if (hash.indexOf("case/") !== 0) { return; }
    load().then(function (data) {
      var section = document.getElementById("drill");
      if (!data.cases[hash]) {
        section.hidden = false;
        document.getElementById("drill-h").textContent = "No case " + hash.slice(5) + " in this report";
        document.getElementById("drill-body").textContent = "";
        return;
      }
      if (state.key !== hash) { state.key = hash; state.sort = "i"; state.dir = 1; state.show = "all"; }
      draw();
      section.hidden = false;
      var heading = document.getElementById("drill-h");
      heading.focus();
      section.scrollIntoView();
    });
  }

  window.addEventListener("hashchange", route);
  route();
})();
