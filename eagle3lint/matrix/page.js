// Builds the matrix table from the JSON embedded in the page; no network access is needed.
(function () {
  "use strict";
  const DATA = JSON.parse(document.getElementById("matrix-data").textContent);
  const S = DATA.strings;
  const STATUS = { r: "ready", b: "blocked", u: "unverified", n: "not a target", e: "error" };
  const CLASS = { r: "s-ready", b: "s-blocked", u: "s-unverified", n: "s-other", e: "s-error" };
  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, text) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const releases = DATA.releases;
  // Rows hold indices into the table of distinct cells (0: not registered in that release).
  DATA.rows.forEach((row) => { row.c = row.c.map((i) => DATA.cells[i]); });

  // Header: release labels, then the per-release summary row.
  const head = $("head");
  const summary = $("summary");
  releases.forEach((rel) => {
    const gate = rel.gate === null ? "no model_type gate" :
      "model_types the gate accepts: " + rel.gate.join(", ");
    const title = [rel.label, "contract: " + rel.era, "getter: " + rel.getter, gate,
      "pipeline-parallel aux relay: " + (rel.pp ? "yes" : "no")].concat(
      rel.errors.length ? [rel.errors.length + " input error(s): " + rel.errors.join("; ")] : []);
    head.appendChild(el("th", { class: "release", title: title.join("\n") }, rel.label));
    summary.appendChild(el("th", { class: "release", title: rel.others + " not targets" },
      rel.ready + "/" + rel.targets));
  });

  // Body: one row per architecture; a family's first row opens its group.
  const body = $("body");
  const families = [];
  const rows = [];
  DATA.rows.forEach((row, i) => {
    const first = !families.length || families[families.length - 1] !== row.f;
    if (first) families.push(row.f);
    const tr = el("tr", { "data-row": String(i), class: first ? "group" : "" });
    const arch = el("td", { class: "arch" }, row.a);
    if (row.rg.length) {
      arch.appendChild(el("span", { class: "badge", title: row.rg.map((r) =>
        "ready in " + r[0] + ", blocked again in " + r[1]).join("\n") }, "⚠ regressed"));
    }
    if (row.v.length) {
      arch.appendChild(el("span", { class: "variants",
        title: "platform variants disagree with CUDA in " + row.v.join(", ") }, "≠ platforms"));
    }
    tr.appendChild(arch);
    tr.appendChild(el("td", { class: "family" }, row.f));
    tr.appendChild(el("td", { class: "role" }, row.r));
    tr.appendChild(el("td", { class: "first" }, row.fr || "never"));
    tr.appendChild(el("td", { class: "first" }, row.pp === null ? "" : row.pp ? "yes" : "no"));
    const regressedIn = new Set(row.rg.map((r) => r[1]));
    row.c.forEach((cell, j) => {
      if (!cell) {
        tr.appendChild(el("td", { class: "cell s-absent", title: "not registered" }, "·"));
        return;
      }
      const [status, codes] = cell;
      let text = status === "r" ? "✓" : status === "n" ? "○" : status === "e" ? "!" : "";
      if (status === "b" || status === "u") {
        const short = codes.map((c) => c.replace(/^EAG/, ""));
        text = (status === "b" ? "✗ " : "? ") + short.slice(0, 2).join(" ") + (short.length > 2 ? " +" + (short.length - 2) : "");
      }
      const attrs = { class: "cell " + CLASS[status], "data-col": String(j),
        title: status === "e" ? "could not be checked: " + releases[j].errors.join("; ") :
          STATUS[status] + (codes.length ? ": " + codes.join(" ") : "") };
      if (status === "b" || status === "u") { attrs.tabindex = "0"; attrs.role = "button"; }
      const td = el("td", attrs, text);
      if (regressedIn.has(releases[j].label)) td.classList.add("regressed");
      tr.appendChild(td);
    });
    body.appendChild(tr);
    rows.push({ data: row, tr: tr,
      text: (row.a + " " + row.f + " " + row.c.map((c) => c ? c[1].join(" ") : "").join(" ")).toLowerCase() });
  });

  // Filters.
  const fill = (select, values) => values.forEach((v) => select.appendChild(el("option", { value: v }, v)));
  fill($("role"), [...new Set(DATA.rows.map((r) => r.r))].sort());
  fill($("family"), families);
  releases.forEach((rel, j) => $("in").appendChild(el("option", { value: String(j) }, rel.label)));

  function statusIn(row, where) {
    let cell = null;
    if (where === "newest") {
      for (let j = row.c.length - 1; j >= 0; j--) if (row.c[j]) { cell = row.c[j]; break; }
    } else {
      cell = row.c[Number(where)];
    }
    return cell ? STATUS[cell[0]] : "absent";
  }

  function apply() {
    const words = $("search").value.toLowerCase().split(/\s+/).filter(Boolean);
    const role = $("role").value, family = $("family").value, status = $("status").value;
    const where = $("in").value;
    let shown = 0;
    rows.forEach((r) => {
      const row = r.data;
      let ok = words.every((w) => r.text.includes(w));
      ok = ok && (!role || row.r === role) && (!family || row.f === family);
      if (ok && status === "regressed") ok = row.rg.length > 0;
      else if (ok && status === "never ready") ok = !row.fr && row.r === "target";
      else if (ok && status) ok = statusIn(row, where) === status;
      r.tr.classList.toggle("hidden", !ok);
      if (ok) shown++;
    });
    $("count").textContent = shown + " of " + rows.length + " architectures";
  }
  ["search", "role", "family", "status", "in"].forEach((id) => $(id).addEventListener("input", apply));
  apply();

  // A blocked cell shows its findings, with links to the rule pages.
  const pop = $("popover");
  function show(td) {
    const row = DATA.rows[Number(td.parentNode.getAttribute("data-row"))];
    const j = Number(td.getAttribute("data-col"));
    const cell = row.c[j];
    pop.textContent = "";
    const close = el("button", { class: "close", "aria-label": "close" }, "×");
    close.addEventListener("click", hide);
    pop.appendChild(close);
    pop.appendChild(el("h2", {}, row.a + " on vLLM " + releases[j].label + ": " + STATUS[cell[0]]));
    const list = el("ul", { class: "findings" });
    cell[2].forEach(([code, sev, msg, hint, loc]) => {
      const li = el("li", {});
      const rule = DATA.rules[code];
      const name = code + (rule ? " " + rule[0] : "");
      li.appendChild(rule && rule[2] ? el("a", { href: rule[2], target: "_blank", rel: "noopener" }, name) : el("b", {}, name));
      li.appendChild(document.createTextNode(" (" + sev + ") " + S[msg]));
      li.appendChild(el("div", { class: "loc" }, S[loc]));
      if (S[hint]) li.appendChild(el("div", { class: "hint" }, "Fix: " + S[hint]));
      list.appendChild(li);
    });
    pop.appendChild(list);
    pop.appendChild(el("div", { class: "hint" }, "More: eagle3lint explain " + cell[1][0] +
      "  ·  repair: eagle3lint fix --arch " + row.a));
    const box = td.getBoundingClientRect();
    pop.style.display = "block";
    const left = Math.min(box.left, window.innerWidth - pop.offsetWidth - 12);
    const below = box.bottom + 6 + pop.offsetHeight < window.innerHeight;
    pop.style.left = Math.max(8, left) + "px";
    pop.style.top = (below ? box.bottom + 6 : Math.max(8, box.top - pop.offsetHeight - 6)) + "px";
  }
  function hide() { pop.style.display = "none"; }
  body.addEventListener("click", (e) => {
    const td = e.target.closest("td.s-blocked, td.s-unverified");
    if (td) { e.stopPropagation(); show(td); }
  });
  body.addEventListener("keydown", (e) => {
    const td = e.target.closest("td.s-blocked, td.s-unverified");
    if (td && (e.key === "Enter" || e.key === " ")) { e.preventDefault(); show(td); }
  });
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") hide(); });
  document.addEventListener("click", (e) => { if (!pop.contains(e.target)) hide(); });

  // Releases run oldest to newest; open on the newest (the architecture column stays in view).
  const wrap = document.querySelector(".wrap");
  wrap.scrollLeft = wrap.scrollWidth;
})();
