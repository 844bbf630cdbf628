// atl's dashboard: one page, views chosen by the URL's hash (#job, #pods[/K],
// #ranks[/K], #hang, #logs/STREAM, #runs/N, #burn/N, #terminal/POD; K: the first row of a page). Data from the head's /api/ (the
// same documents atlctl status --json and events --json print); text goes in
// with textContent only.
'use strict';

const state = { status: null, statusQuery: null, events: [], faultsOnly: false, view: null, arg: null, follow: null,
                charts: [], renderedBurn: null, renderToken: 0, terminal: null, session: null };
// A big job has tens of thousands of ranks: the status comes a page at a time
// (the views that list none ask for none: its counts are always whole).
const PAGE = 500;

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function table(headers, rows, id) {
  const head = el('tr', {}, headers.map((h) => el('th', { text: h })));
  const body = rows.map((r) => el('tr', {}, r.map((c) =>
    c instanceof Node ? el('td', {}, c) : el('td', typeof c === 'number' ? { class: 'num' } : {}, c ?? ''))));
  return el('table', id ? { id } : {}, el('thead', {}, head), el('tbody', {}, body));
}

function stateSpan(s) { return el('span', { class: 'state-' + s, text: s }); }
function card(label, value, id) {
  return el('div', { class: 'card' }, el('div', { class: 'label', text: label }),
            el('div', id ? { class: 'value', id } : { class: 'value' }, value));
}
function bytes(n) {
  if (n === undefined) return '';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return n.toFixed(i ? 1 : 0) + ' ' + units[i];
}
function when(ms) { return new Date(ms).toLocaleString(); }
// "12 s", "3 min 4 s", "2 h 5 min": a duration as a person says it.
function took(ms) {
  if (ms === null || ms === undefined || ms < 0) return '';
  const s = Math.round(ms / 1000);
  if (s < 60) return s + ' s';
  if (s < 3600) return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
  return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
}
// The guide's state names, and what each means to a person.
const HUMAN_STATE = { pending: 'waiting for its pods', initializing: 'checking its pods',
  command: 'running', restarting: 'restarting after a fault', debugStop: 'stopped for debugging',
  debugCommand: 'running a debug command', succeeded: 'succeeded', failed: 'failed' };

async function api(path) {
  const r = await fetch(path, { credentials: 'same-origin', cache: 'no-store' });
  if (r.status === 401) { window.location.href = '/login'; throw new Error('logged out'); }
  if (!r.ok) throw new Error(path + ': ' + r.status + ' ' + (await r.text()));
  return r.json();
}

// --- views --------------------------------------------------------------------

function viewJob(v) {
  const s = state.status;
  const world = s.mode === 'spmd' ? s.world_size : '—';
  const g = s.goodput;  // the job's time spent training, and what faults cost
  v.append(el('div', { class: 'cards' },
    card('State', el('span', {}, stateSpan(s.state), el('span', { class: 'muted', id: 'state-human',
      text: HUMAN_STATE[s.state] && HUMAN_STATE[s.state] !== s.state ? ' (' + HUMAN_STATE[s.state] + ')' : '' })), 'card-state'),
    card('Mode', s.mode),
    card('Attempt', s.attempt), card('Restarts used', s.restarts + ' / ' + s.max_restarts, 'card-restarts'),
    card('Workers', s.workers + (s.spare_workers ? ' + ' + s.spare_workers + ' spare' : '')),
    card('World size', world), card('Head', s.address),
    card('Goodput', g && g.elapsed_s ? (100 * g.ratio).toFixed(1) + ' %' : '—', 'card-goodput')));
  // Ray mode: Ray's own dashboard, relayed behind this login.
  if (s.mode === 'ray') {
    v.append(el('p', {}, el('a', { href: '/ray/', id: 'ray-dashboard', target: '_blank', rel: 'noopener', text: "Ray's dashboard" }),
      ' (jobs, actors, tasks, logs and metrics as Ray shows them)'));
  }
  // TensorBoard (headnode --tensorboard-logdir), relayed behind this login.
  if (state.session && state.session.tensorboard) {
    v.append(el('p', {}, el('a', { href: '/tensorboard/', id: 'tensorboard', target: '_blank', rel: 'noopener', text: 'TensorBoard' }),
      ' (the job\'s event files, as TensorBoard shows them)'));
  }
  // What ran and when, as Ray's job page and kubectl put first.
  const now = Date.now();
  const age = s.ended_ms ? 'took ' + took(s.ended_ms - (s.started_ms || s.submitted_ms))
    : s.started_ms ? 'running for ' + took(now - s.started_ms) : 'waiting for ' + took(now - s.submitted_ms);
  v.append(el('p', { id: 'job-times' }, 'Entrypoint ', el('code', { id: 'entrypoint', text: s.entrypoint || '' }),
    el('br'), 'Submitted ' + (s.submitted_ms ? when(s.submitted_ms) : '—') +
    (s.started_ms ? ', started ' + when(s.started_ms) : '') +
    (s.ended_ms ? ', ended ' + when(s.ended_ms) : '') + ' (' + age + ')'));
  if (s.failure) v.append(el('p', { class: 'error', id: 'failure', text: 'Failure: ' + s.failure }));
  // Every attempt: when, how it ended (a fault, a stop then recover, the
  // head's restart, the end), its logs.
  const history = s.attempt_history || [];
  if (history.length) {
    const logs = (k) => el('a', { href: '#attempt/' + k, text: 'logs' });
    v.append(el('h2', { text: 'Attempts' }), attemptTimeline(history, s.started_ms || s.submitted_ms,
      s.ended_ms || now), table(['Attempt', 'Started', 'Ended', 'Took', 'How it ended', 'Why', ''],
      history.slice().reverse().map((a) => [a.attempt, a.started_ms ? when(a.started_ms) : '—',
        a.ended_ms ? when(a.ended_ms) : '', a.started_ms && a.ended_ms ? took(a.ended_ms - a.started_ms)
          : a.started_ms ? took(now - a.started_ms) : '',
        el('span', { class: 'how how-' + a.how.replace(/ /g, '-'), text: a.how }), a.detail || '', logs(a.attempt)]),
      'attempt-history'));
  }
  if (g && g.recent_faults && g.recent_faults.length) {
    const secs = (x) => (x === null || x === undefined ? '—' : x.toFixed(1) + ' s');
    v.append(el('h2', { text: 'What the faults cost' }),
      el('p', { text: 'Training ' + secs(g.productive_s) + ' of ' + secs(g.elapsed_s) +
        '; detection ' + secs(g.detection_s) + ', restart ' + secs(g.restart_s) +
        ', re-warm ' + secs(g.rewarm_s) + ' over ' + g.faults + ' faults' }),
      table(['Attempt', 'Fault', 'Detection', 'Restart', 'Re-warm'],
        g.recent_faults.map((f) => [f.attempt, f.reason, secs(f.detection_s), secs(f.restart_s),
          secs(f.rewarm_s)]), 'fault-costs'));
  }
  if (s.taints && s.taints.length) {
    v.append(el('h2', { text: 'Taints' }), table(['Node', 'Source', 'Reason', 'Since'],
      s.taints.map((t) => [t.node, t.source, t.reason, when(t.since_ms)])));
  }
  // Faults only: what went wrong and what atl did (the supervisor marks them).
  const toggle = el('input', { type: 'checkbox', id: 'faults-only' });
  toggle.checked = state.faultsOnly;
  toggle.addEventListener('change', () => { state.faultsOnly = toggle.checked; render(); });
  v.append(el('h2', { text: 'Timeline' }), el('label', {}, toggle, ' faults only'));
  const events = state.events.filter((e) => !state.faultsOnly || e.fault).reverse();
  v.append(events.length ? table(['Time', 'Kind', 'Event'],
    events.map((e) => [when(e.time_ms), e.kind, e.text]), 'timeline')
    : el('p', { class: 'muted', text: 'No events yet.' }));
}

// "1–500 of 32000" with links to the pages before and after, when there are more.
function pager(view, first, shown, total) {
  if (total <= shown && first === 0) return el('span');
  const nav = el('p', { class: 'pager', id: view + '-pager' },
    (first + (shown ? 1 : 0)) + '–' + (first + shown) + ' of ' + total + '  ');
  if (first > 0) nav.append(el('a', { href: '#' + view + '/' + Math.max(0, first - PAGE), text: '← previous' }), ' ');
  if (first + shown < total) nav.append(el('a', { href: '#' + view + '/' + (first + PAGE), text: 'next →' }));
  return nav;
}

function pageStart() { return Math.max(0, parseInt(state.arg, 10) || 0); }

function viewPods(v) {
  const s = state.status;
  const c = s.pod_counts || {};
  v.append(el('h2', { text: 'Pods (' + s.pods_total + ': ' + (c.joined || 0) + ' joined, ' +
    (c.lost || 0) + ' lost, ' + (c.missing || 0) + ' missing)' }));
  v.append(pager('pods', pageStart(), s.pods.length, s.pods_total));
  v.append(table(['Pod', 'State', 'Role', 'Node', 'Address', 'CPUs', 'GPUs', 'Memory', 'Heartbeat age', 'Tainted', 'Log', 'Terminal'],
    s.pods.map((p) => {
      const idx = p.name.lastIndexOf('-worker-');
      const stream = idx >= 0 ? 'pod-worker-' + p.name.slice(idx + 8) : null;
      // A shell in the pod (as powerful as atlctl): for a pod that has joined.
      const terminal = p.state === 'joined'
        ? el('a', { href: '#terminal/' + encodeURIComponent(p.name), class: 'terminal-link', 'data-pod': p.name, text: 'terminal' }) : '';
      return [p.name, stateSpan(p.state), p.role ? stateSpan(p.role) : '', p.node, p.address, p.cpus,
        p.gpus, bytes(p.memory), p.heartbeat_age_ms === undefined ? '' : p.heartbeat_age_ms + ' ms',
        p.tainted ? 'yes' : 'no', stream ? el('a', { href: '#logs/' + stream, text: 'log' }) : '', terminal];
    }), 'pods'));
}

function rankExit(r) {
  if (r.state !== 'exited') return '';
  let t = r.signal ? 'signal ' + r.signal : 'exit ' + r.exit_code;
  if (r.note) t += ' (' + r.note + ')';
  return t;
}

function viewRanks(v) {
  const s = state.status;
  if (!s.ranks_total) {
    v.append(el('p', { class: 'muted', text: s.mode === 'spmd' ? 'No ranks are running.' : 'A ' + s.mode + '-mode job has no ranks: see its driver log.' }));
    if (s.mode !== 'spmd') v.append(el('a', { href: '#logs/driver', text: 'driver log' }));
    return;
  }
  const c = s.rank_counts;
  v.append(el('h2', { text: 'Ranks (' + s.ranks_total + ': ' + c.running + ' running, ' +
    c.starting + ' starting, ' + c.exited + ' exited)' }));
  v.append(pager('ranks', pageStart(), s.ranks.length, s.ranks_total));
  // A running rank's figures: its own process, the time since its last line,
  // lines/s and CPU% over the last 10 s, memory; marked when it stands apart
  // from its peers (silent while they print, far slower than their median).
  const marked = s.ranks.filter((r) => r.vitals && r.vitals.mark);
  if (marked.length) {
    v.append(el('p', { class: 'error', id: 'ranks-marked', text: marked.map((r) =>
      'rank ' + (r.rank !== undefined ? r.rank : r.stream) + ' is ' + r.vitals.mark).join('; ') }));
  }
  const fig = (r, f) => (r.vitals ? f(r.vitals) : '—');
  // Each figure with its last minutes beside it (a point every 2 s): a
  // rank that was always slow and one that slowed down look different.
  const spark = (r, key, label, fmt) => {
    const t = r.trend;
    const now = fig(r, (x) => fmt(x[key]));
    if (!t || t[key].length < 2) return now;
    return el('span', { class: 'with-spark' }, sparkline(t[key], label + ' over the last ' +
      Math.round(t.ago_ms[0] / 1000) + ' s: ' + fmt(Math.min(...t[key])) + ' to ' + fmt(Math.max(...t[key])),
      'spark-' + key), ' ', now);
  };
  // The time since each rank's last progress as the hang watch counts it
  // (lines or atl.progress signals), against the silence it allows: the
  // line climbing to the dashed one is the job becoming suspect.
  const hw = s.hang_watch;
  const secs = (ms) => Math.round(ms / 1000) + ' s';
  const progress = (r) => {
    const t = r.trend;
    const ages = t && t.progress_age_ms ? t.progress_age_ms.filter((x) => x !== null) : [];
    if (!hw || ages.length < 2) return '—';
    return el('span', { class: 'with-spark' }, sparkline(ages, 'time since its last progress over the last ' +
      Math.round(t.ago_ms[0] / 1000) + ' s: ' + secs(Math.min(...ages)) + ' to ' + secs(Math.max(...ages)) +
      '; the dashed line: suspect after ' + secs(hw.idle_timeout_ms) + ' of silence (the hang timeout' +
      (hw.learned ? ', learned from the job\'s own steps' : '') + ')', 'spark-progress_age_ms', hw.idle_timeout_ms),
      ' ', secs(ages[ages.length - 1]));
  };
  const cols = ['Rank', 'Pod', 'PID', 'State', 'Last output', 'Lines/s', 'CPU %', 'RSS', 'Exit', 'Log'];
  if (hw) cols.splice(5, 0, 'Progress');
  v.append(table(cols, s.ranks.map((r) => [
    r.rank !== undefined ? r.rank : r.stream, r.pod, r.vitals && r.vitals.user_pid ? r.vitals.user_pid : r.pid,
    r.vitals && r.vitals.mark ? el('span', {}, stateSpan(r.state), ' ', el('span', { class: 'mark mark-' + r.vitals.mark, text: r.vitals.mark })) : stateSpan(r.state),
    spark(r, 'output_age_ms', 'time since its last line', (ms) => Math.round(ms / 1000) + ' s ago'),
    ...(hw ? [progress(r)] : []),
    spark(r, 'lines_per_s', 'lines/s', (x) => String(x)),
    spark(r, 'cpu_percent', 'CPU %', (x) => String(x)), spark(r, 'rss_bytes', 'RSS', bytes), rankExit(r),
    el('a', { href: '#logs/' + r.stream, text: r.stream + '.log' })]), 'ranks'));
}

// A small line of `values` (oldest first) from 0 to their largest (a
// figure that barely moves looks flat), its title saying what it shows;
// with `limit`, a dashed line at that value too (and room for it).
function sparkline(values, title, cls, limit) {
  const w = 80, h = 18, lo = Math.min(0, ...values);
  const hi = Math.max(...values, limit === undefined ? -Infinity : limit);
  const span = hi - lo || 1;
  const pts = values.map((y, i) => (i * (w / (values.length - 1))).toFixed(1) + ',' +
    (h - 1 - ((y - lo) / span) * (h - 2)).toFixed(1)).join(' ');
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('class', 'spark ' + cls);
  svg.setAttribute('width', w);
  svg.setAttribute('height', h);
  svg.setAttribute('viewBox', '0 0 ' + w + ' ' + h);
  const t = document.createElementNS(ns, 'title');
  t.textContent = title;
  const line = document.createElementNS(ns, 'polyline');
  line.setAttribute('points', pts);
  svg.append(t, line);
  if (limit !== undefined) {
    const y = (h - 1 - ((limit - lo) / span) * (h - 2)).toFixed(1);
    const bar = document.createElementNS(ns, 'line');
    bar.setAttribute('class', 'limit');
    bar.setAttribute('x1', 0);
    bar.setAttribute('x2', w);
    bar.setAttribute('y1', y);
    bar.setAttribute('y2', y);
    svg.append(bar);
  }
  return svg;
}

// The hang watch: is the job suspect, which ranks made no progress for
// longest, its timeline; and every rank's stack on demand, grouped, the
// outliers named (atlctl diagnose).
async function viewHang(v) {
  const p = await api('/api/progress');
  const seconds = (ms) => (ms / 1000).toFixed(1) + ' s';
  v.append(el('div', { class: 'cards' },
    card('Hang watch', p.watching ? 'on' : (p.timeout_ms ? 'not now' : 'off'), 'card-watch'),
    card('Hang timeout', p.timeout_ms ? seconds(p.timeout_ms) : 'off'),
    card('Suspect', el('span', { class: p.suspect ? 'fail' : 'pass', text: p.suspect ? 'yes' : 'no' }), 'card-suspect')));
  const ages = p.progress_age_ms.map((ms, rank) => ({ rank, ms })).filter((a) => a.ms !== null);
  if (ages.length) {
    ages.sort((a, b) => b.ms - a.ms);
    v.append(el('h2', { text: 'Longest without progress' }),
      table(['Rank', 'No progress for'], ages.slice(0, 20).map((a) => [a.rank, seconds(a.ms)]), 'progress'));
  }
  const button = el('button', { id: 'diagnose', type: 'button', text: 'Take every rank\'s stack now' });
  const ranks = el('input', { id: 'diagnose-ranks', value: 'all', size: '12' });
  const out = el('div', { id: 'diagnosis' });
  button.addEventListener('click', async () => {
    button.disabled = true;
    out.replaceChildren(el('p', { class: 'muted', text: 'Taking stacks (each node within 5 s)…' }));
    try {
      const d = await api('/api/diagnose?ranks=' + encodeURIComponent(ranks.value));
      const grouped = d.groups.reduce((n, g) => n + g.ranks.length, 0);
      const shown = [el('h2', { text: 'Stacks of ' + grouped + ' of ' + d.ranks.length + ' ranks, by group' }),
        table(['Ranks', 'Top frame'], d.groups.map((g) => [g.ranks.join(','), el('code', { text: g.top })]), 'groups'),
        el('p', { id: 'outliers', class: d.outliers.length ? 'fail' : 'muted',
                  text: d.outliers.length ? 'Outliers: ' + d.why : 'No rank stands apart.' }),
        table(['Rank', 'Pod', 'State', 'Tool', 'Top frame', 'No stack because'],
          d.ranks.map((r) => [r.rank, r.pod, r.state, r.tool, el('code', { text: r.top || '' }),
            r.error || (r.top ? '' : 'no frame could be read (its process may have just ended)')]), 'diagnosis-ranks')];
      // Where each rank stands in its collectives (torch's flight recorder).
      const recorded = d.ranks.filter((r) => r.collectives);
      if (recorded.length || d.collectives.findings.length) {
        shown.push(el('h2', { text: 'Collectives (flight records of ' + recorded.length + ' ranks)' }),
          el('p', { id: 'collective-findings', class: d.collectives.findings.length ? 'fail' : 'muted',
                    text: d.collectives.findings.length ? d.collectives.findings.join('; ')
                                                        : 'None in flight, nobody behind.' }),
          table(['Rank', 'Group', 'Last entered', 'Finished'],
            recorded.flatMap((r) => r.collectives.map((g) => [r.rank,
              g.group === '0' ? 'default' : g.group + (g.name && g.name !== 'undefined' ? ' (' + g.name + ')' : ''),
              (g.op || 'collective') + ' #' + g.entered, '#' + g.completed])), 'collectives'));
      } else {
        const why = d.ranks.find((r) => r.collectives_error);
        if (why) shown.push(el('p', { class: 'muted', text: 'No flight record: ' + why.collectives_error }));
      }
      out.replaceChildren(...shown);
    } catch (err) {
      out.replaceChildren(el('p', { class: 'error', text: String(err.message || err) }));
    }
    button.disabled = false;
  });
  v.append(el('h2', { text: 'Diagnosis' }), el('div', { class: 'toolbar' },
    el('label', { for: 'diagnose-ranks', text: 'Ranks' }), ranks, button), out);
  const events = state.events.filter((e) => e.kind === 'hang').reverse();
  v.append(el('h2', { text: 'Hang watch timeline' }), events.length
    ? table(['Time', 'Event'], events.map((e) => [when(e.time_ms), e.text]), 'hang-timeline')
    : el('p', { class: 'muted', text: 'Nothing seen: every rank made progress within the timeout.' }));
}

function stopFollowing() {
  if (state.follow) { state.follow.close(); state.follow = null; }
}

// The attempts on one time line, from the job's start to its end (or now):
// each a bar as long as it ran, coloured by how it ended, the gaps between
// them the time a restart took; a bar's title says what the table says.
function attemptTimeline(history, from, to) {
  const timed = history.filter((a) => a.started_ms);
  if (!timed.length || !(to > from)) return el('div');
  const span = to - from;
  const at = (ms) => Math.max(0, Math.min(100, ((ms - from) / span) * 100));
  const bars = timed.map((a) => {
    const end = a.ended_ms || to;
    const how = a.ended_ms ? a.how : 'running';
    const bar = el('a', { class: 'seg how-' + how.replace(/ /g, '-'), href: '#attempt/' + a.attempt,
      title: 'attempt ' + a.attempt + ': ' + how + (a.detail ? ' (' + a.detail + ')' : '') + ', ' +
        took(end - a.started_ms), text: String(a.attempt) });
    bar.style.left = at(a.started_ms) + '%';
    bar.style.width = Math.max(0.4, at(end) - at(a.started_ms)) + '%';
    return bar;
  });
  const legend = [...new Set(timed.map((a) => (a.ended_ms ? a.how : 'running')))].map((how) =>
    el('span', { class: 'key' }, el('span', { class: 'swatch how-' + how.replace(/ /g, '-') }), how));
  return el('div', { id: 'attempt-timeline' }, el('div', { class: 'track' }, bars),
    el('div', { class: 'axis muted' }, el('span', { text: when(from) }), el('span', { text: took(span) }),
      el('span', { text: when(to) })),
    el('div', { class: 'legend muted' }, legend));
}

// The log view: one stream of the current attempt (followed live) or of an
// earlier one, from its last 1,000 lines or a time on; each line's time in
// front on request; a search that keeps the lines containing it; the whole
// file as a download.
const SINCE = [[0, 'last 1,000 lines'], [60e3, 'last minute'], [600e3, 'last 10 minutes'],
  [3600e3, 'last hour'], [86400e3, 'last day']];

async function viewLogs(v) {
  const o = state.logOptions || (state.logOptions = { attempt: 0, since: 0, stamped: false, search: '' });
  const latest = (state.status && state.status.attempt) || 0;
  const at = o.attempt ? '&attempt=' + o.attempt : '';
  const list = await api('/api/logs' + (o.attempt ? '?attempt=' + o.attempt : ''));
  const current = (state.arg && list.some((l) => l.stream === state.arg)) ? state.arg
    : (list.find((l) => l.stream.startsWith('rank-')) || list[0] || {}).stream;
  const select = el('select', { id: 'log-stream' }, list.map((l) => {
    const opt = el('option', { value: l.stream, text: l.stream + ' (' + bytes(l.bytes) + ')' });
    if (l.stream === current) opt.selected = true;
    return opt;
  }));
  select.addEventListener('change', () => { window.location.hash = '#logs/' + select.value; });
  const attempts = [el('option', { value: '0', text: 'current' + (latest ? ' (' + latest + ')' : '') })];
  for (let k = latest - 1; k >= 1; k--) attempts.push(el('option', { value: String(k), text: 'attempt ' + k }));
  const attempt = el('select', { id: 'log-attempt' }, attempts);
  attempt.value = String(o.attempt);
  const since = el('select', { id: 'log-since' }, SINCE.map(([ms, label]) => el('option', { value: String(ms), text: label })));
  since.value = String(o.since);
  const stamped = el('input', { type: 'checkbox', id: 'log-times' });
  stamped.checked = o.stamped;
  const search = el('input', { type: 'search', id: 'log-search', placeholder: 'search', value: o.search });
  // A change of attempt, start or times reads the log again (same view).
  const reload = () => { stopFollowing(); v.textContent = ''; viewLogs(v); };
  attempt.addEventListener('change', () => { o.attempt = Number(attempt.value); reload(); });
  since.addEventListener('change', () => { o.since = Number(since.value); reload(); });
  stamped.addEventListener('change', () => { o.stamped = stamped.checked; reload(); });
  const follow = el('input', { type: 'checkbox', id: 'log-autoscroll', checked: '' });
  const status = el('span', { class: 'muted', id: 'log-status' });
  const download = current ? el('a', { id: 'log-download', text: 'download',
    href: '/api/logs/' + encodeURIComponent(current) + '/download' + (o.attempt ? '?attempt=' + o.attempt : '') }) : '';
  v.append(el('div', { class: 'toolbar' }, el('label', { for: 'log-stream', text: 'Log' }), select,
    el('label', { for: 'log-attempt', text: 'Attempt' }), attempt, since,
    el('label', {}, stamped, ' times'), search, download,
    el('label', {}, follow, ' keep at the end'), status));
  const pre = el('pre', { class: 'log', id: 'log' });
  v.append(pre);
  if (!current) { status.textContent = 'no logs yet'; return; }
  // What was read, whole lines; shown all or as the search keeps them.
  let text = '';
  const show = () => {
    const needle = search.value.toLowerCase();
    if (!needle) { pre.textContent = text; status.dataset.matches = ''; }
    else {
      const kept = text.split('\n').filter((l) => l.toLowerCase().includes(needle));
      pre.textContent = kept.join('\n') + (kept.length ? '\n' : '');
      status.dataset.matches = String(kept.length);
      status.textContent = kept.length + (kept.length === 1 ? ' line contains "' : ' lines contain "') +
        search.value + '"';
    }
    if (follow.checked) pre.scrollTop = pre.scrollHeight;
  };
  search.addEventListener('input', () => { o.search = search.value; show(); });
  // Enter: the whole log, on the head (not only the lines read here), each
  // match with its line number; a click reads the log from there.
  search.addEventListener('keydown', async (e) => {
    if (e.key !== 'Enter' || !search.value) return;
    const found = await api(base + '/search?q=' + encodeURIComponent(search.value) + at);
    stopFollowing();
    pre.textContent = '';
    for (const m of found.matches) {
      const jump = el('a', { href: '#', class: 'log-match', text: String(m.line).padStart(7) + '  ' });
      jump.addEventListener('click', async (ev) => {
        ev.preventDefault();
        const chunk = await api(base + '?offset=' + m.offset + '&max=65536' + at + times);
        text = chunk.text;
        search.value = o.search = '';
        status.textContent = 'from line ' + m.line + ' (' + current + ')';
        show();
        pre.scrollTop = 0;
      });
      pre.append(jump, m.text + '\n');
    }
    status.dataset.matches = String(found.total);
    status.textContent = found.total + (found.total === 1 ? ' line' : ' lines') + ' of ' + found.lines +
      ' in the whole log contain "' + search.value + '"' +
      (found.total > found.matches.length ? ' (the first ' + found.matches.length + ' shown)' : '');
  });
  const times = o.stamped ? '&stamped=1' : '';
  const base = '/api/logs/' + encodeURIComponent(current);
  // A time filter counts back from now, or from an earlier attempt's end.
  const ended = o.attempt && state.status && (state.status.attempt_history || [])
    .find((a) => a.attempt === o.attempt && a.ended_ms);
  const end = ended ? ended.ended_ms : Date.now();
  const first = o.since
    ? await api(base + '?since=' + (end - o.since) + '&max=4000000' + at + times)
    : await api(base + '?tail=1000' + at + times);
  text = first.text;
  status.textContent = o.attempt ? 'attempt ' + o.attempt + ' (ended)' +
    (o.since && ended ? ': the time counts back from its end' : '') : '';
  if (!text && o.since) status.textContent += ' no line in that time (' +
    (o.attempt ? 'of attempt ' + o.attempt : 'until now') + '): choose a longer one';
  show();
  if (o.attempt) return;  // an earlier attempt's log no longer grows
  const source = new EventSource(base + '/follow?offset=' + first.next_offset + times);
  state.follow = source;
  source.onopen = () => { if (!search.value) status.textContent = 'following ' + current; };
  source.onerror = () => { status.textContent = 'reconnecting…'; };
  source.addEventListener('skipped', (e) => {
    text += '… ' + bytes(Number(e.data)) + ' skipped: the log grows faster than a page can show (the whole of it: download) …\n';
    show();
  });
  // One event per piece of the log: its lines (EventSource joins them with
  // newlines); its id is the offset a reconnect goes on from.
  source.onmessage = (e) => {
    text += e.data + '\n';
    // Keep the page light: at most ~2 MB of text in it.
    if (text.length > 2e6) text = text.slice(text.indexOf('\n', text.length - 1e6) + 1);
    show();
  };
}

async function viewRuns(v) {
  const s = state.status;
  v.append(el('h2', { text: 'Debug runs' }));
  if (s.runs_total > s.runs.length) {
    v.append(el('p', { class: 'muted', id: 'runs-newest',
                       text: 'The newest ' + s.runs.length + ' of ' + s.runs_total + ' runs.' }));
  }
  if (!s.runs.length) {
    v.append(el('p', { class: 'muted', text: 'None yet: atlctl stop, then atlctl run / check / burn.' }));
  } else {
    v.append(table(['Run', 'Command', 'Ranks', 'Done', 'Output', 'Charts'], s.runs.slice().reverse().map((r) => [
      r.run, el('code', { text: r.command }), r.ranks, r.done ? 'yes' : 'running',
      el('a', { href: '#runs/' + r.run, text: 'output' }),
      /^(burn|check)/.test(r.command) ? el('a', { href: '#burn/' + r.run, text: 'charts' }) : '']), 'runs'));
  }
  const checks = Object.entries(s.checks || {});
  if (checks.length) {
    v.append(el('h2', { text: 'Check verdicts' }), table(['Pod', 'Run', 'Verdict', 'Reason'],
      checks.map(([pod, c]) => [pod, c.run, el('span', { class: c.passed ? 'pass' : 'fail', text: c.passed ? 'PASS' : 'FAIL' }), c.reason || ''])));
  }
  const run = state.arg ? Number(state.arg) : null;
  if (!run) return;
  const list = await api('/api/logs');
  const prefix = 'run-' + run + '-rank-';
  const streams = list.filter((l) => l.stream.startsWith(prefix));
  v.append(el('h2', { text: 'Output of run ' + run }));
  if (!streams.length) v.append(el('p', { class: 'muted', text: 'No output yet.' }));
  for (const l of streams) {
    const chunk = await api('/api/logs/' + l.stream + '?tail=200');
    v.append(el('h3', {}, el('a', { href: '#logs/' + l.stream, text: l.stream })),
      el('pre', { class: 'log short', 'data-stream': l.stream, text: chunk.text }));
  }
}

// atl-burn's metric ids as a person reads them.
const METRIC_NAMES = { allreduce_busbw_gbps: 'AllReduce bus bandwidth (GB/s)', gemm_tflops: 'GEMM (TFLOP/s)',
  h2d_gbps: 'host → device (GB/s)', d2h_gbps: 'device → host (GB/s)' };
function metricName(id) { return METRIC_NAMES[id] || id; }
// "8M" -> 8388608: message sizes sort and plot as numbers, not text.
function sizeBytes(text) {
  const m = /^(\d+(?:\.\d+)?)([KMGT]?)/i.exec(text || '');
  if (!m) return 0;
  return Number(m[1]) * Math.pow(1024, ' KMGT'.indexOf((m[2] || ' ').toUpperCase()));
}

// 8388608 -> "8M", as atl-burn's sizes are written.
function sizeText(n) {
  for (const [unit, b] of [['T', 2 ** 40], ['G', 2 ** 30], ['M', 2 ** 20], ['K', 2 ** 10]])
    if (n >= b) return +(n / b).toFixed(1) + unit;
  return String(n);
}

function lineChart(canvasId, title, yLabel, datasets, xAxis) {
  const canvas = el('canvas', { id: canvasId });
  const box = el('div', { class: 'chart-box' }, canvas);
  const render = () => {
    if (typeof Chart === 'undefined') return;
    const chart = new Chart(canvas, {
      type: 'line',
      data: { datasets: colored(datasets) },
      options: {
        animation: false, maintainAspectRatio: false, parsing: false, normalized: true,
        plugins: { title: { display: true, text: title } },
        scales: { x: xAxis || { type: 'linear', title: { display: true, text: 'round' } },
                  y: { beginAtZero: true, title: { display: true, text: yLabel } } },
      },
    });
    state.charts.push(chart);
  };
  return { box, render };
}

const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed', '#0891b2', '#db2777',
                 '#65a30d', '#475569', '#ea580c'];

function series(points, keyOf, y) {
  const groups = new Map();
  for (const p of points) {
    const k = keyOf(p);
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push({ x: p.round, y: y(p) });
  }
  return [...groups.entries()].map(([label, data]) => ({ label, data, pointRadius: 0, borderWidth: 1.5 }));
}

function colored(datasets) {
  return datasets.map((d, i) => ({ ...d, borderColor: PALETTE[i % PALETTE.length],
                                   backgroundColor: PALETTE[i % PALETTE.length] }));
}

async function viewBurn(v) {
  const s = state.status;
  state.renderedBurn = null;
  const burns = s.runs.filter((r) => /^(burn|check)/.test(r.command));
  const run = state.arg ? Number(state.arg) : (burns.length ? burns[burns.length - 1].run : null);
  const select = el('select', { id: 'burn-run' }, burns.slice().reverse().map((r) => {
    const o = el('option', { value: r.run, text: 'run ' + r.run + ': ' + r.command });
    if (r.run === run) o.selected = true;
    return o;
  }));
  select.addEventListener('change', () => { window.location.hash = '#burn/' + select.value; });
  v.append(el('div', { class: 'toolbar' }, el('label', { for: 'burn-run', text: 'Run' }), select));
  if (s.figures && s.figures.length) {
    const sorted = s.figures.slice().sort((a, b) => a.pod.localeCompare(b.pod) || a.gpu - b.gpu ||
      metricName(a.metric).localeCompare(metricName(b.metric)) || sizeBytes(a.size) - sizeBytes(b.size));
    v.append(el('h2', { text: 'Last figures per GPU' }), table(['Pod', 'GPU', 'Metric', 'Size', 'Value'],
      sorted.map((f) => [f.pod, f.gpu, metricName(f.metric), f.size || '', Number(f.value.toFixed(3))]), 'figures'));
  }
  if (!run) {
    v.append(el('p', { class: 'muted', text: 'No burn or check has run yet: atlctl stop, then atlctl burn.' }));
    return;
  }
  // The figures atl-burn handed the supervisor, one per GPU (allreduce: per
  // size) per round: structured, never its output parsed again.
  const report = await api('/api/runs/' + run + '/figures');
  const of = (metric) => report.figures.filter((f) => f.metric === metric);
  const charts = [];
  const allreduce = of('allreduce_busbw_gbps');
  if (allreduce.length) {
    // As nccl-tests users read it: bus bandwidth against the message size
    // (log scale), each pod's best round per size.
    const best = new Map();
    for (const p of allreduce) {
      const k = p.pod + '|' + p.size;
      if (!best.has(k) || best.get(k).value < p.value) best.set(k, p);
    }
    const bySize = new Map();
    for (const p of [...best.values()].sort((a, b) => sizeBytes(a.size) - sizeBytes(b.size))) {
      if (!bySize.has(p.pod)) bySize.set(p.pod, []);
      bySize.get(p.pod).push({ x: sizeBytes(p.size), y: p.value });
    }
    charts.push(lineChart('chart-busbw-size', 'AllReduce bus bandwidth against message size', 'GB/s',
      [...bySize.entries()].map(([pod, data]) => ({ label: pod, data, pointRadius: 3, borderWidth: 1.5 })),
      { type: 'logarithmic', title: { display: true, text: 'message size' },
        // A tick at each size measured, written as the burn wrote it.
        afterBuildTicks: (axis) => {
          const xs = [...new Set([...bySize.values()].flat().map((p) => p.x))].sort((a, b) => a - b);
          axis.ticks = xs.map((value) => ({ value }));
        },
        ticks: { callback: (value) => sizeText(value) } }));
    charts.push(lineChart('chart-allreduce', 'AllReduce BusBW per size per round', 'GB/s',
      series(allreduce, (p) => p.size + ' (' + p.pod + ')', (p) => p.value)));
  }
  const gemm = of('gemm_tflops');
  if (gemm.length) {
    charts.push(lineChart('chart-gemm', 'GEMM TFLOP/s per GPU per round', 'TFLOP/s',
      series(gemm, (p) => p.pod + ' GPU ' + p.gpu, (p) => p.value)));
  }
  const h2d = of('h2d_gbps');
  const d2h = of('d2h_gbps');
  if (h2d.length || d2h.length) {
    charts.push(lineChart('chart-transfer', 'Host↔device GB/s per GPU per round', 'GB/s',
      [...series(h2d, (p) => p.pod + ' GPU ' + p.gpu + ' H2D', (p) => p.value),
       ...series(d2h, (p) => p.pod + ' GPU ' + p.gpu + ' D2H', (p) => p.value)]));
  }
  const runInfo = s.runs.find((r) => r.run === run);
  v.append(el('h2', { text: 'Run ' + run + (runInfo && !runInfo.done ? ' (running)' : '') }));
  if (!charts.length) v.append(el('p', { class: 'muted', id: 'burn-empty', text: 'No figures from this run (yet).' }));
  v.append(el('div', { class: 'charts' }, charts.map((c) => c.box)));
  if (report.figures_released) {
    v.append(el('p', { class: 'muted', text: 'This run\'s figures were released: only the newest runs with figures keep theirs.' }));
  }
  if (report.figures_dropped) {
    v.append(el('p', { class: 'muted', text: report.figures_dropped + ' later figures were not kept (a run keeps its first ' + report.figures.length + ').' }));
  }
  // Drawn once the view is in the page (a detached canvas has no size).
  afterAttach(v, ...charts.map((c) => c.render));
  state.renderedBurn = { run, done: runInfo ? runInfo.done : true };
}

// --- the web terminal ---------------------------------------------------------------
// A shell in a pod over a WebSocket to the head (which relays it to the pod):
// keystrokes go as "i<bytes>", window sizes as "r<rows>,<cols>"; the shell's
// output comes back as binary frames, the end as a close frame with a reason.

function closeTerminal() {
  if (!state.terminal) return;
  const t = state.terminal;
  state.terminal = null;
  window.removeEventListener('resize', t.onResize);
  if (t.ws.readyState <= 1) t.ws.close(1000, 'the viewer left');
  t.term.destroy();
}

async function viewTerminal(v) {
  const pod = state.arg;
  v.append(el('h2', { text: 'Terminal: ' + pod }));
  const session = await api('/api/session');
  const s = state.status;
  if (s && (s.state === 'succeeded' || s.state === 'failed')) {
    v.append(el('p', { class: 'error', id: 'terminal-status', text: 'The job has ended (' + s.state +
      '): its pods are gone, so there is no shell to open. Its logs stay: see Logs.' }));
    return;
  }
  if (!session.terminal) {
    v.append(el('p', { class: 'muted', id: 'terminal-status', text: 'The web terminal is off on this job (headnode --web-terminal off).' }));
    return;
  }
  v.append(el('p', { class: 'muted', text: 'A shell in the pod, as powerful as atlctl there (atlctl status, atlctl logs, …). ' +
    'Opening and closing it are in the timeline; it closes with this page, your session, or the pod.' }));
  const status = el('p', { id: 'terminal-status', class: 'muted', text: 'connecting…' });
  const box = el('div', { id: 'terminal' });
  v.append(box, status);
  afterAttach(v, () => openTerminal(pod, session.csrf || '', box, status));
}

function openTerminal(pod, csrf, box, status) {
  closeTerminal();
  const term = new Terminal({ rendererType: 'dom', cursorBlink: true, fontSize: 14, scrollback: 5000 });
  term.open(box);
  term.fit();
  const scheme = window.location.protocol === 'https:' ? 'wss:' : 'ws:';
  const ws = new WebSocket(scheme + '//' + window.location.host + '/api/terminal/' + encodeURIComponent(pod) +
    '?csrf=' + encodeURIComponent(csrf) + '&rows=' + term.rows + '&cols=' + term.cols);
  ws.binaryType = 'arraybuffer';
  const decoder = new TextDecoder();
  let opened = false;
  ws.onopen = () => { opened = true; status.textContent = 'connected to ' + pod; term.focus(); };
  ws.onmessage = (e) => term.write(typeof e.data === 'string' ? e.data : decoder.decode(new Uint8Array(e.data), { stream: true }));
  ws.onclose = (e) => {
    const why = e.reason || (opened ? 'the connection dropped'
      : 'the head refused it (the pod\'s terminal limit, the pod gone, or the session ended): see the timeline');
    status.textContent = 'closed: ' + why;
    status.className = opened ? 'muted' : 'error';
    term.write('\r\n[terminal closed: ' + why + ']\r\n');
  };
  term.on('data', (d) => { if (ws.readyState === 1) ws.send('i' + d); });
  term.on('resize', (size) => { if (ws.readyState === 1) ws.send('r' + size.rows + ',' + size.cols); });
  const onResize = () => term.fit();
  window.addEventListener('resize', onResize);
  state.terminal = { term, ws, onResize };
}

// #attempt/K: that attempt's logs (the log view's attempt: 0 is the current).
async function viewAttempt() {
  const o = state.logOptions || (state.logOptions = { attempt: 0, since: 0, stamped: false, search: '' });
  const k = Number(state.arg) || 0;
  o.attempt = k === (state.status && state.status.attempt) ? 0 : k;
  window.location.hash = '#logs';
}

const views = { attempt: viewAttempt, job: viewJob, pods: viewPods, ranks: viewRanks, hang: viewHang, logs: viewLogs, runs: viewRuns,
                burn: viewBurn, terminal: viewTerminal };

// --- the loop -------------------------------------------------------------------

// What the current view needs of the status: a page of its list, or no list.
// Debug runs: the newest PAGE of them for the views that list runs (a job
// keeps up to --history), none for the others.
function statusQuery() {
  const first = pageStart();
  if (state.view === 'ranks') return '?ranks=' + PAGE + '&rank_offset=' + first + '&pods=0&runs=0&trend=1';
  if (state.view === 'pods') return '?pods=' + PAGE + '&pod_offset=' + first + '&ranks=0&runs=0';
  if (state.view === 'runs' || state.view === 'burn') return '?ranks=0&pods=0&runs=' + PAGE;
  return '?ranks=0&pods=0&runs=0';
}

async function refreshStatus() {
  const query = statusQuery();
  state.status = await api('/api/status' + query);
  state.statusQuery = query;
  state.events = await api('/api/events');
  if (!state.session) state.session = await api('/api/session');
  document.getElementById('job-id').textContent = state.status.job_id;
  const badge = document.getElementById('job-state');
  badge.textContent = state.status.state;
  badge.className = 'badge state-' + state.status.state;
  document.getElementById('footer').textContent = 'updated ' + new Date().toLocaleTimeString();
}

async function render() {
  // A newer render (the hash changed while this one waited on the head)
  // wins: this one's view is dropped, never drawn over it.
  const token = state.renderToken = (state.renderToken || 0) + 1;
  const [name, ...rest] = (window.location.hash.slice(1) || 'job').split('/');
  const view = views[name] ? name : 'job';
  state.view = view;
  state.arg = rest.length ? decodeURIComponent(rest.join('/')) : null;
  if (state.statusQuery !== statusQuery()) {
    try {
      await refreshStatus();
    } catch (err) {
      document.getElementById('footer').textContent = 'not updated: ' + (err.message || err);
    }
  }
  stopFollowing();
  closeTerminal();
  state.charts.forEach((c) => c.destroy());
  state.charts = [];
  for (const a of document.querySelectorAll('header nav a')) a.classList.toggle('active', a.dataset.view === view);
  const fresh = el('main', { id: 'view', 'data-view': view });
  try {
    await views[view](fresh);
  } catch (err) {
    fresh.append(el('p', { class: 'error', text: String(err.message || err) }));
  }
  if (token !== state.renderToken) return;
  document.getElementById('view').replaceWith(fresh);
  for (const f of fresh.afterAttach || []) f();
}

// What a view does once it is in the page (a canvas is drawn, a terminal
// opens): kept with that view, so a view a newer render replaced does none.
function afterAttach(view, ...fs) { (view.afterAttach = view.afterAttach || []).push(...fs); }

// Tables refresh with the status; the log view keeps its stream, the burn view
// redraws only while its run is still running.
async function tick() {
  try {
    await refreshStatus();
    if (['job', 'pods', 'ranks'].includes(state.view)) await render();
    if (state.view === 'burn') {
      const burns = state.status.runs.filter((r) => /^(burn|check)/.test(r.command));
      const latest = burns.length ? burns[burns.length - 1].run : null;
      const shown = state.renderedBurn;
      if (!shown || !shown.done || (!state.arg && latest !== shown.run)) await render();
    }
  } catch (err) {
    document.getElementById('footer').textContent = 'not updated: ' + (err.message || err);
  }
}

window.addEventListener('hashchange', () => { render(); });
(async () => {
  await render();  // fetches the status this view needs
  setInterval(tick, 2000);
})();
