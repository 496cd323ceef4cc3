// The live page served at `/` and its script at `/app.js`: polls
// /api/stats every second and draws one card per pool. Every text that
// comes from a pool (error texts, names) goes in with textContent, never
// as markup.
namespace pool::http_detail {

extern const char* const page_html;
extern const char* const page_js;

const char* const page_html = R"html(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pool</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; background: #f6f7f9; color: #1d2330; }
header { display: flex; gap: 1em; align-items: center; padding: .6em 1em; background: #1d2330; color: #fff; }
header h1 { font-size: 1.1em; margin: 0; }
header .grow { flex: 1; }
#conn.bad { color: #ff8a80; }
main { padding: 1em; display: grid; gap: 1em; grid-template-columns: repeat(auto-fill, minmax(min(560px, 100%), 1fr)); }
body.stale main { opacity: .55; }
.card { min-width: 0; }
.banner { background: #fff3cd; border: 1px solid #f9a825; border-radius: 4px; padding: .3em .6em; margin: .3em 0 .6em; }
.banner[hidden] { display: none; }
.card { background: #fff; border-radius: 6px; padding: 1em; box-shadow: 0 1px 3px rgba(0,0,0,.12); }
.card h2 { margin: 0 0 .5em; font-size: 1.1em; display: flex; gap: .6em; align-items: baseline; }
.card h2 .tag { font-size: .75em; padding: 0 .4em; border-radius: 3px; background: #c62828; color: #fff; }
.card h2 .tag[hidden] { display: none; }
.bar { display: flex; height: 14px; border-radius: 3px; overflow: hidden; background: #e0e3e8; margin: .3em 0 .6em; }
.bar span { display: block; height: 100%; }
.busy-seg { background: #2e7d32; } .waiting-seg { background: #f9a825; } .sleeping-seg { background: #90a4ae; }
.grid { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); grid-auto-flow: row dense; gap: .2em 1em; }
.grid div { min-width: 0; }
.grid div.wide { grid-column: span 2; }
.grid div b { display: block; font-size: 1.15em; font-variant-numeric: tabular-nums; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.grid div small { display: block; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.grid div b.small { font-size: .95em; }
.grid div small { color: #5b6475; }
.sparks { display: grid; grid-template-columns: 1fr 1fr 1fr; gap: .6em; margin-top: .8em; }
.sparks svg { width: 100%; height: 48px; background: #f1f3f6; border-radius: 3px; }
.sparks small { color: #5b6475; }
polyline { fill: none; stroke-width: 1.5; }
.l50 { stroke: #1565c0; } .l95 { stroke: #ef6c00; } .l99 { stroke: #c62828; } .ltp { stroke: #2e7d32; }
.actions { margin-top: .8em; display: flex; gap: .4em; flex-wrap: wrap; }
details { margin-top: .6em; }
ul.log { margin: .3em 0; padding-left: 1.2em; max-height: 12em; overflow: auto; font-size: .9em; }
ul.log li code { background: #f1f3f6; padding: 0 .2em; }
#action-log { font-size: .9em; padding: 0 1em 1em; }
table.jobs { width: 100%; border-collapse: collapse; font-size: .85em; margin-top: .3em; }
table.jobs td, table.jobs th { text-align: left; padding: .1em .4em; border-bottom: 1px solid #eceef2; }
table.jobs td code { background: #f1f3f6; }
#job-page { margin: 1em 1em 0; }
#job-page[hidden] { display: none; }
#job-page dl { display: grid; grid-template-columns: max-content 1fr; gap: .2em 1em; margin: .5em 0; }
#job-page dt { color: #5b6475; }
#job-page dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
#job-page code { background: #f1f3f6; white-space: pre-wrap; }
</style>
</head>
<body>
<header>
  <h1>pool</h1><span id="conn">connecting</span><span class="grow"></span>
  <label>operator token <input id="token" type="password" autocomplete="off" size="24"></label>
</header>
<section id="job-page" class="card" data-job-page hidden></section>
<main id="pools"></main>
<ul id="action-log" class="log"></ul>
<script src="/app.js"></script>
</body>
</html>
)html";

const char* const page_js = R"js('use strict';
const $ = (sel, root) => (root || document).querySelector(sel);
const tokenInput = $('#token');
tokenInput.value = sessionStorage.getItem('pool-token') || '';
tokenInput.addEventListener('change', () => sessionStorage.setItem('pool-token', tokenInput.value));
let actionsEnabled = false;

function el(tag, attrs, children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children || []) e.append(c);
  return e;
}
function fmtDur(s) {
  if (!(s > 0)) return '0';
  if (s < 1e-3) return (s * 1e6).toPrecision(3) + 'µs';
  if (s < 1) return (s * 1e3).toPrecision(3) + 'ms';
  if (s < 120) return s.toPrecision(3) + 's';
  return Math.round(s / 60) + 'min';
}
function fmtNum(n) { return Number(n).toLocaleString('en-US', {maximumFractionDigits: 1}); }
function figure(card, key, label, cls) {
  const b = el('b', {'data-figure': key, class: cls || ''}, ['–']);
  const small = el('small', {}, [label]);
  // Three figures in one (percentiles) take two columns.
  card.grid.append(el('div', cls === 'small' ? {class: 'wide'} : {}, [b, small]));
  card.figures[key] = b;
  card.labels[key] = small;
}
function spark(card, key, label, lines) {
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('viewBox', '0 0 300 48');
  svg.setAttribute('preserveAspectRatio', 'none');
  const polys = lines.map(cls => {
    const p = document.createElementNS('http://www.w3.org/2000/svg', 'polyline');
    p.setAttribute('class', cls);
    svg.append(p);
    return p;
  });
  const cap = el('small', {}, [label]);
  card.sparks.append(el('div', {'data-spark': key}, [svg, cap]));
  card.lines[key] = {polys, cap, label};
}
function drawSpark(card, key, seriesList, fmt) {
  const s = card.lines[key];
  const max = Math.max(1e-12, ...seriesList.flat());
  seriesList.forEach((series, i) => {
    const n = series.length;
    const pts = series.map((v, j) => `${(n > 1 ? j / (n - 1) : 1) * 300},${46 - (v / max) * 44}`);
    s.polys[i].setAttribute('points', pts.join(' '));
  });
  s.cap.textContent = `${s.label} (max ${fmt(max)})`;
}
function makeCard(name) {
  const root = el('section', {class: 'card', 'data-pool': name});
  const card = {root, figures: {}, labels: {}, lines: {}};
  card.alarm = el('span', {class: 'tag', hidden: ''}, ['backlog alarm']);
  card.down = el('span', {class: 'tag', hidden: ''}, ['terminated']);
  card.paused = el('span', {class: 'tag', 'data-tag': 'paused', hidden: ''}, ['paused']);
  root.append(el('h2', {}, [name, card.alarm, card.paused, card.down]));
  // A sustained overload (the log's warning) as a banner, for two minutes
  // after each warning (they repeat once per overload interval).
  card.banner = el('div', {class: 'banner', 'data-banner': 'overload', hidden: ''});
  root.append(card.banner);
  card.bar = el('div', {class: 'bar', title: 'busy / waiting / sleeping'});
  card.segs = ['busy', 'waiting', 'sleeping'].map(k => { const s = el('span', {class: k + '-seg'}); card.bar.append(s); return s; });
  root.append(card.bar);
  card.grid = el('div', {class: 'grid'});
  root.append(card.grid);
  figure(card, 'workers', 'busy / workers');
  figure(card, 'utilization', 'utilization');
  figure(card, 'queued', 'due (+ delayed)');
  figure(card, 'oldest', 'oldest due age');
  figure(card, 'throughput', 'ops/s (last min)');
  figure(card, 'completed', 'completed');
  figure(card, 'failed', 'failed');
  figure(card, 'dead', 'dead set');
  figure(card, 'retried', 'retried');
  figure(card, 'wait', 'wait p50 · p95 · p99', 'small');
  figure(card, 'run', 'run p50 · p95 · p99', 'small');
  figure(card, 'high', 'high: busy / due / waiting');
  figure(card, 'restarts', 'restart budget used');
  card.sparks = el('div', {class: 'sparks'});
  root.append(card.sparks);
  spark(card, 'throughput', 'ops/s', ['ltp']);
  spark(card, 'wait', 'wait p50 p95 p99', ['l50', 'l95', 'l99']);
  spark(card, 'run', 'run p50 p95 p99', ['l50', 'l95', 'l99']);
  const actions = el('div', {class: 'actions'});
  const button = (label, fn, title) => {
    const b = el('button', {type: 'button', 'data-action': label, title: title || ''}, [label]);
    b.addEventListener('click', fn);
    actions.append(b);
    return b;
  };
  card.buttons = [
    button('resize', () => {
      const n = prompt(`Resize '${name}' to how many workers?`);
      if (n !== null && confirm(`Resize '${name}' to ${n} workers?`)) act(name, 'resize', {workers: Number(n)});
    }),
    button('drain', () => { if (confirm(`Drain '${name}'? It finishes its work, then stops.`)) act(name, 'drain', {}); }),
    button('cancel', () => {
      const id = prompt(`Cancel which operation id of '${name}'?`);
      if (id !== null && confirm(`Cancel op#${id} of '${name}'?`)) act(name, 'cancel', {operation: Number(id)});
    }),
    button('pause', () => { if (confirm(`Pause '${name}'? No attempt starts until resumed.`)) act(name, 'pause', {}); }),
    button('resume', () => act(name, 'resume', {})),
  ];
  root.append(actions);
  card.failures = el('ul', {class: 'log'});
  card.events = el('ul', {class: 'log'});
  card.jobState = el('select', {'data-jobs': 'state'}, ['', 'running', 'waiting', 'delayed', 'retrying', 'failed', 'cancelled', 'stopped'].map(s => el('option', {value: s}, [s || 'every state'])));
  // The dead set as a whole: every failed job (the API's filter form).
  const deadButton = (verb, question) => {
    const b = el('button', {type: 'button', 'data-dead': verb}, [`${verb} all failed`]);
    b.addEventListener('click', () => { if (confirm(question)) act(name, `jobs/${verb}?state=failed`, {}).then(() => refreshJobs(name, card)); });
    card.buttons.push(b);
    return b;
  };
  card.deadActions = el('span', {class: 'actions'}, [
    deadButton('retry', `Retry every failed job of '${name}' as a new operation?`),
    deadButton('discard', `Discard every failed job of '${name}' for good?`)]);
  card.jobs = el('tbody', {});
  card.jobSummary = el('summary', {}, ['jobs']);
  card.failSummary = el('summary', {}, ['recent failures']);
  card.eventSummary = el('summary', {}, ['recent events']);
  root.append(el('details', {open: ''}, [card.failSummary, card.failures]));
  root.append(el('details', {}, [card.eventSummary, card.events]));
  root.append(el('details', {'data-jobs': 'panel'}, [card.jobSummary, card.jobState, card.deadActions,
    el('table', {class: 'jobs'}, [el('thead', {}, [el('tr', {}, ['id', 'state', 'attempt', 'age', 'worker / last error', 'input', ''].map(h => el('th', {}, [h])))]), card.jobs])]));
  $('#pools').append(root);
  return card;
}
const cards = new Map();
function time(t) { return new Date(t * 1000).toLocaleTimeString(); }
function render(data) {
  actionsEnabled = data.actions;
  for (const p of data.pools) {
    let card = cards.get(p.name);
    if (!card) { card = makeCard(p.name); cards.set(p.name, card); }
    for (const b of card.buttons) { b.disabled = !actionsEnabled; b.title = actionsEnabled ? '' : 'the server was started without an operator token'; }
    card.down.hidden = !p.down;
    if (!p.sampled) continue;
    const s = p.stats, w = p.window, f = card.figures;
    card.alarm.hidden = !s.backlog_alarm;
    card.paused.hidden = !s.paused;
    const total = Math.max(1, s.workers);
    card.segs[0].style.width = (100 * s.busy / total) + '%';
    card.segs[1].style.width = (100 * s.waiting / total) + '%';
    card.segs[2].style.width = (100 * s.sleeping / total) + '%';
    f.workers.textContent = `${s.busy} / ${s.workers}`;
    f.utilization.textContent = Math.round(100 * p.utilization) + '%';
    f.queued.textContent = `${fmtNum(s.available)} (+${fmtNum(s.delayed)})`;
    f.oldest.textContent = fmtDur(p.oldest_due_age);
    f.throughput.textContent = fmtNum(w.throughput);
    f.completed.textContent = fmtNum(s.completed);
    card.labels.completed.textContent = 'completed';
    if (s.expected_total) {
      const ended = s.completed + s.failed + s.cancelled;
      const left = Math.max(0, s.expected_total - ended);
      const eta = left === 0 ? 'done' : w.throughput > 0 ? 'ETA ' + fmtDur(left / w.throughput) : 'ETA ?';
      f.completed.textContent += ` of ${fmtNum(s.expected_total)}`;
      card.labels.completed.textContent = `completed · ${eta}`;
    }
    for (const b of Object.values(f)) b.title = b.textContent;
    const over = p.events.find(x => x.kind === 'overload');
    card.banner.hidden = !(over && Date.now() / 1000 - over.at < 120);
    if (over) card.banner.textContent = `Overloaded: ${fmtNum(over.count)} operations waiting at ${time(over.at)}, `
      + 'more than the overload threshold for longer than it may last. Add workers (resize), slow the submitters, or set a capacity.';
    f.failed.textContent = fmtNum(s.failed);
    f.dead.textContent = fmtNum(s.dead || 0);
    f.retried.textContent = fmtNum(s.retried);
    f.wait.textContent = [w.wait.p50, w.wait.p95, w.wait.p99].map(fmtDur).join(' · ');
    f.run.textContent = [w.run.p50, w.run.p95, w.run.p99].map(fmtDur).join(' · ');
    f.high.textContent = `${s.busy_high} / ${fmtNum(s.available_high)} / ${fmtNum(s.waiting_high)}`;
    f.restarts.textContent = p.restarts.max < 0 ? `${p.restarts.in_window} (no limit)` : `${p.restarts.in_window} of ${p.restarts.max} in ${fmtDur(p.restarts.window)}`;
    const series = p.series;
    drawSpark(card, 'throughput', [series.map(x => x.throughput)], fmtNum);
    drawSpark(card, 'wait', ['p50', 'p95', 'p99'].map(q => series.map(x => x.wait[q])), fmtDur);
    drawSpark(card, 'run', ['p50', 'p95', 'p99'].map(q => series.map(x => x.run[q])), fmtDur);
    card.failSummary.textContent = `recent failures (${p.failures.length})`;
    card.failures.replaceChildren(...p.failures.map(x => el('li', {}, [
      `${time(x.at)} op#${x.operation}: `, el('code', {}, [x.error]),
      ...(x.attempts.length ? [el('ul', {}, x.attempts.map((a, i) => el('li', {}, [`attempt ${i + 1}: `, el('code', {}, [a])])))] : [])])));
    card.eventSummary.textContent = `recent events (${p.events.length})`;
    card.events.replaceChildren(...p.events.map(x => el('li', {}, [`${time(x.at)} ${x.kind} (${x.count})`])));
  }
}
// The first 20 jobs of the open jobs panels (inputs only with the token).
async function refreshJobs(name, card) {
  if (!card.jobs.closest('details').open) return;
  const q = card.jobState.value ? `&state=${card.jobState.value}` : '';
  const headers = tokenInput.value ? {'Authorization': 'Bearer ' + tokenInput.value} : {};
  try {
    const r = await fetch(`/api/pools/${encodeURIComponent(name)}/jobs?limit=20${q}`, {cache: 'no-store', headers});
    const d = await r.json();
    if (!r.ok) { card.jobSummary.textContent = `jobs: ${d.error}`; return; }
    card.jobSummary.textContent = `jobs (${d.total} held)`;
    card.jobs.replaceChildren(...d.jobs.map(j => el('tr', {'data-job': String(j.id), 'data-state': j.state}, [
      el('td', {}, [el('a', {href: jobHref(name, j.id), 'data-job-link': String(j.id)}, [`op#${j.id}`])]), el('td', {}, [j.state]), el('td', {}, [String(j.attempt)]),
      el('td', {}, [fmtDur(j.age)]), el('td', {}, [j.holder || j.last_error || '',
        ...(j.state === 'failed' && j.history ? [el('ul', {}, j.history.map(a => el('li', {}, [`attempt ${a.attempt} at +${fmtDur(a.after_submit)}: `, el('code', {}, [a.error])])))] : [])]),
      el('td', {}, [el('code', {}, [j.payload || ''])]),
      el('td', {}, kept(j.state) ? [jobButton(name, card, j.id, 'retry'), jobButton(name, card, j.id, 'discard')] : [])])));
  } catch (e) {
    card.jobSummary.textContent = `jobs: ${e}`;
  }
}
// Jobs of the dead set: failed, and the cancelled and stopped ones kept
// beside them; each can be retried or discarded.
function kept(state) { return ['failed', 'cancelled', 'stopped'].includes(state); }
// Retry or discard one such job (behind the operator token); `after`
// runs once the pool answered.
function jobButton(name, card, id, verb, after) {
  const attrs = {type: 'button', 'data-job-action': verb};
  if (!actionsEnabled) attrs.disabled = '';
  const b = el('button', attrs, [verb]);
  b.addEventListener('click', () => {
    if (verb === 'discard' && !confirm(`Discard op#${id} of '${name}' for good?`)) return;
    act(name, `jobs/${id}/${verb}`, {}).then(() => { if (card) refreshJobs(name, card); if (after) after(); });
  });
  return b;
}
// A job's own page (#job/<pool>/<id>, a link to share): every field the
// jobs view has, its input (with the token) and its attempt history,
// and retry or discard for a failed one.
function jobHref(name, id) { return `#job/${encodeURIComponent(name)}/${id}`; }
async function showJobPage() {
  const page = $('#job-page');
  const m = /^#job\/([^/]+)\/(\d+)$/.exec(location.hash);
  if (!m) { page.hidden = true; page.replaceChildren(); return; }
  const name = decodeURIComponent(m[1]), id = m[2];
  page.hidden = false;
  const back = el('a', {href: '#', 'data-job-back': ''}, ['back to the pools']);
  const title = el('h2', {}, [`op#${id} of '${name}'`]);
  const headers = tokenInput.value ? {'Authorization': 'Bearer ' + tokenInput.value} : {};
  let j = null, why = '';
  try {
    const r = await fetch(`/api/pools/${encodeURIComponent(name)}/jobs?id=${id}&limit=1`, {cache: 'no-store', headers});
    const d = await r.json();
    if (!r.ok) why = d.error; else j = d.jobs.find(x => String(x.id) === id) || null;
  } catch (e) { why = String(e); }
  if (!j) {
    page.replaceChildren(title, el('p', {'data-job-field': 'none'}, [why || `'${name}' holds no op#${id} now: it finished, or was retried (as a new operation) or discarded.`]), back);
    return;
  }
  const row = (k, label, v) => [el('dt', {}, [label]), el('dd', {'data-job-field': k}, [v])];
  const when = j.since < 0 ? `due in ${fmtDur(-j.since)}` : `for ${fmtDur(j.since)}`;
  const dl = el('dl', {}, [
    ...row('state', 'state', `${j.state} ${when}`),
    ...row('attempt', 'attempt', String(j.attempt)),
    ...row('age', 'submitted', `${fmtDur(j.age)} ago`),
    ...row('priority', 'priority', String(j.priority)),
    ...(j.key ? row('key', 'unique key', j.key) : []),
    ...(j.concurrency_key ? row('concurrency_key', 'concurrency key', j.concurrency_key) : []),
    ...(j.holder ? row('holder', 'held by', j.holder) : []),
    ...row('input', 'input', j.payload ? el('code', {}, [j.payload]) : '(with the operator token)'),
    ...(j.last_error ? row('last_error', 'last error', el('code', {}, [j.last_error])) : [])]);
  const history = el('table', {class: 'jobs', 'data-job-field': 'history'}, [
    el('thead', {}, [el('tr', {}, ['attempt', 'failed at', 'why'].map(h => el('th', {}, [h])))]),
    el('tbody', {}, (j.history || []).map(a => el('tr', {}, [el('td', {}, [String(a.attempt)]),
      el('td', {}, [`+${fmtDur(a.after_submit)}`]), el('td', {}, [el('code', {}, [a.error])])])))]);
  const actions = el('div', {class: 'actions'}, kept(j.state)
    ? ['retry', 'discard'].map(v => jobButton(name, cards.get(name), j.id, v, showJobPage)) : []);
  page.replaceChildren(title, dl, el('h3', {}, [`failed attempts (${(j.history || []).length})`]), history, actions, back);
}
window.addEventListener('hashchange', showJobPage);
showJobPage();
async function act(pool, action, body) {
  const line = el('li', {}, [`${new Date().toLocaleTimeString()} ${action} ${pool}: …`]);
  $('#action-log').prepend(line);
  try {
    const r = await fetch(`/api/pools/${encodeURIComponent(pool)}/${action}`, {
      method: 'POST', body: JSON.stringify(body),
      headers: {'Content-Type': 'application/json', 'Authorization': 'Bearer ' + tokenInput.value}});
    const d = await r.json();
    line.textContent = `${new Date().toLocaleTimeString()} ${action} ${pool}: ${r.ok ? 'ok' : r.status + ' ' + d.error}`;
  } catch (e) {
    line.textContent = `${action} ${pool}: ${e}`;
  }
}
// The last state stays on the page when the process goes away, and comes
// back (marked as not live) when the page is loaded again without it.
let lastLive = null;
function showStale(since) {
  document.body.classList.add('stale');
  for (const c of cards.values()) for (const b of c.buttons) b.disabled = true;
  const conn = $('#conn');
  conn.className = 'bad';
  conn.textContent = `disconnected${since ? ' since ' + since : ''}: showing the last state, from `
    + (lastLive ? new Date(lastLive).toLocaleTimeString() : '?');
}
try {
  const kept = JSON.parse(localStorage.getItem('pool-last-state') || 'null');
  if (kept && kept.data) { lastLive = kept.at; render(kept.data); showStale(''); }
} catch (e) { /* no state kept */ }
let downSince = null;
async function refresh() {
  const conn = $('#conn');
  try {
    const r = await fetch('/api/stats', {cache: 'no-store'});
    const data = await r.json();
    render(data);
    for (const [name, card] of cards) refreshJobs(name, card);
    lastLive = Date.now();
    downSince = null;
    try { localStorage.setItem('pool-last-state', JSON.stringify({at: lastLive, data})); } catch (e) { /* full */ }
    document.body.classList.remove('stale');
    conn.textContent = 'live, updated ' + new Date().toLocaleTimeString();
    conn.className = '';
  } catch (e) {
    downSince = downSince || new Date().toLocaleTimeString();
    showStale(downSince);
  }
}
refresh();
setInterval(refresh, 1000);
)js";

} // namespace pool::http_detail
