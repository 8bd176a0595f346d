// Pages are sections shown one at a time by the URL's hash; a judgment's page (#jN) is built on
// demand from the JSON blobs. Texts from the inputs only ever go through textContent: never HTML.
"use strict";
(function () {
  const cache = {};
  function data(name) {
    if (!(name in cache)) cache[name] = JSON.parse(document.getElementById("data-" + name).textContent);
    return cache[name];
  }
  function el(tag, cls, ...kids) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    for (const kid of kids) {
      if (kid === null || kid === undefined) continue;
      node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return node;
  }
  function link(href, text, cls) {
    const a = el("a", cls, text);
    a.href = href;
    return a;
  }
  const fmt = (x) => (x === null || x === undefined ? "n/a" : Number(x).toFixed(2));
  const close = (a, b) => Math.abs(a - b) < 1e-6;

  function textBlock(text, missing) {
    return text ? el("div", "text", text) : el("div", "text na", missing);
  }

  function allowedScores(allowed, given) {
    const box = el("div", "allowed");
    for (const s of allowed) box.append(el("span", given !== undefined && close(s, given) ? "given" : "", fmt(s)));
    return box;
  }

  function itemsTable(rubric, items, withDescription) {
    const byId = {};
    for (const it of items || []) byId[it.item_id] = it;
    const head = ["Item", withDescription ? "What the official standard asks" : null, "Allowed scores", "Judge's score", "Analysis"];
    const table = el("table", "items");
    table.append(el("thead", null, el("tr", null, ...head.filter((h) => h !== null).map((h) => el("th", null, h)))));
    const body = el("tbody");
    const rows = rubric.length ? rubric : (items || []).map((it) => ({ item_id: it.item_id, max_score: it.max_score, allowed_scores: null }));
    for (const r of rows) {
      const it = byId[r.item_id];
      const tr = el("tr", "item");
      tr.dataset.item = r.item_id;
      tr.append(el("td", null, el("b", null, r.item_id), r.annulled ? el("div", "muted", "annulled: full marks") : null));
      if (withDescription) tr.append(el("td", null, r.section ? el("div", "muted", r.section) : null, (r.label ? r.label + " " : "") + r.description));
      tr.append(el("td", null, r.allowed_scores ? allowedScores(r.allowed_scores, it ? it.score : undefined) : el("span", "muted", "max " + fmt(r.max_score))));
      tr.append(el("td", "num score", it ? fmt(it.score) + " / " + fmt(it.max_score !== undefined ? it.max_score : r.max_score) : el("span", "na", "not scored")));
      tr.append(el("td", "analysis", it && it.analysis ? it.analysis : ""));
      body.append(tr);
    }
    table.append(body);
    return el("div", "scroll", table);
  }

  function members(list) {
    const box = el("div", null, el("h3", null, "Jury members"));
    for (const m of list) {
      const name = m.judge_model || m.judge || m.model || "member";
      const head = el("p", null, el("b", null, name), " · ", el("span", "badge " + (m.status === "ok" ? "ok" : "fail"), m.status || "?"),
        " · ", m.status === "ok" || m.score !== undefined ? "score " + fmt(m.score) : "", m.error ? el("div", "err", m.error) : null);
      const div = el("div", "member", head);
      // a member's item scores: {item id: score} as juries record them (MemberScore), or a list of items
      const items = Array.isArray(m.items) ? m.items
        : m.items && typeof m.items === "object" ? Object.keys(m.items).sort().map((k) => ({ item_id: k, score: m.items[k] })) : [];
      if (items.length) div.append(itemsTable([], items, false));
      box.append(div);
    }
    return box;
  }

  function renderJudgment(id) {
    const page = document.getElementById("judgment");
    page.replaceChildren();
    const j = data("judgments")[id];
    if (!j) { page.append(el("p", "na", "No such judgment.")); return; }
    const q = data("questions")[j.question_id];
    const anchor = data("anchors")[j.judge + "\t" + j.model];
    page.append(el("p", "muted", anchor ? link("#" + anchor, "← " + j.model) : j.model, " · judge " + j.judge));
    page.append(el("h2", null, j.question_id));
    const head = el("p", "verdict", el("span", "badge " + (j.status === "ok" ? "ok" : "fail"), j.status), " ");
    if (j.status === "ok") head.append(el("b", "total", fmt(j.score) + " / " + fmt(j.max_score)));
    page.append(head);
    if (j.status !== "ok") {
      page.append(el("div", "failure", el("b", null, "Failed judgment (" + j.status + "): no score, not a zero."),
        el("div", "err", j.error || "no error text recorded")));
    }
    const others = data("judgments").map((o, i) => [o, i]).filter(([o, i]) => i !== id && o.model === j.model && o.question_id === j.question_id);
    if (others.length) {
      const p = el("p", "muted", "Other judgments of this answer: ");
      for (const [o, i] of others) p.append(link("#j" + i, o.judge + ": " + (o.status === "ok" ? fmt(o.score) : o.status), "chip"), " ");
      page.append(p);
    }
    if (q) {
      page.append(el("h3", null, "Question"), textBlock(q.statement));
      for (const it of q.items) page.append(el("p", null, el("b", null, (it.label ? it.label + ") " : "") + "(" + fmt(it.max_score) + ")"), " ", it.prompt));
    } else {
      page.append(el("p", "na", "Question text not available (give --dataset)."));
    }
    const answer = data("answers")[j.model + "\t" + j.question_id];
    const made = data("generation")[j.model + "\t" + j.question_id];  // what generating it cost, when its file says
    const cost = made ? el("p", "muted", "generating this answer: " + (made.prompt_tokens ?? "?") + " prompt, " +
      (made.completion_tokens ?? "?") + " completion tokens (" + (made.reasoning_tokens ?? "?") + " reasoning), " +
      (made.cost === null || made.cost === undefined ? "cost unknown" : "$" + Number(made.cost).toFixed(4))) : null;
    const reference = q ? q.reference.map((r, i) => (q.items.length > 1 ? (q.items[i] ? q.items[i].label : i) + ") " : "") + r).join("\n\n") : "";
    page.append(el("div", "pair",
      el("div", null, el("h3", null, "Candidate's answer"), textBlock(answer, "answer not available"), cost),
      el("div", null, el("h3", null, "Official answer"), textBlock(reference, "official answer not available (give --dataset)"))));
    const rubric = q ? q.rubric : [];
    if (rubric.length || (j.items && j.items.length)) {
      page.append(el("h3", null, "Rubric items and the judge's scores"), itemsTable(rubric, j.items, rubric.length > 0));
    }
    (j.texts || []).forEach((t, i) => {
      const d = el("details", null, el("summary", null, j.texts.length > 1 ? "Judge's text, turn " + (i + 1) : "Judge's text"), el("div", "text", t));
      if (!(j.items && j.items.length)) d.open = true;
      page.append(d);
    });
    if (j.members && j.members.length) page.append(members(j.members));
    page.append(el("p", "muted", "source: " + j.source));
  }

  function show() {
    const hash = decodeURIComponent(location.hash.slice(1));
    let target = hash || "leaderboard";
    if (/^j\d+$/.test(target)) { renderJudgment(Number(target.slice(1))); target = "judgment"; }
    if (!document.getElementById(target) || !document.getElementById(target).classList.contains("page")) target = "leaderboard";
    for (const p of document.querySelectorAll(".page")) p.classList.toggle("active", p.id === target);
    window.scrollTo(0, 0);
    setTimeout(() => window.scrollTo(0, 0), 0); // after the browser's own jump to the #id
  }

  for (const m of document.querySelectorAll(".model")) {
    for (const [cls, name] of [["f-failed", "only-failed"], ["f-nonok", "only-nonok"]]) {
      const box = m.querySelector("." + cls);
      box.addEventListener("change", () => m.classList.toggle(name, box.checked));
    }
  }
  window.addEventListener("hashchange", show);
  show();
})();
