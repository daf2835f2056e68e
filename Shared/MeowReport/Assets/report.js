(function () {
'use strict';
var data = JSON.parse(document.getElementById('meow-data').textContent);
var ROW = 24, MAX_LIST = 500;

function el(tag, attrs) {
  var node = document.createElement(tag);
  if (attrs) for (var key in attrs) {
    if (key === 'text') node.textContent = attrs[key];
    else if (key === 'cls') node.className = attrs[key];
    else if (key === 'onclick') node.onclick = attrs[key];
    else node.setAttribute(key, attrs[key]);
  }
  for (var i = 2; i < arguments.length; i++) {
    var kid = arguments[i];
    if (kid == null) continue;
    node.appendChild(typeof kid === 'string' ? document.createTextNode(kid) : kid);
  }
  return node;
}
// A field's value as a person reads it: a record field's {type, value} shows its value; keys
// sorted, so two copies of one value read (and compare) the same.
function plain(v) {
  return v && typeof v === 'object' && !Array.isArray(v) && 'type' in v && 'value' in v ? v.value : v;
}
function canon(v) {
  if (v && typeof v === 'object') {
    if (Array.isArray(v)) return '[' + v.map(canon).join(',') + ']';
    return '{' + Object.keys(v).sort().map(function (k) { return JSON.stringify(k) + ':' + canon(v[k]); }).join(',') + '}';
  }
  return JSON.stringify(v);
}
function show(value) {
  if (value === undefined) return '(absent)';
  return canon(plain(value));
}

// Lanes: the cloud, then each device and test client, named as the processes name them.
function laneOfClient(client, connection) {
  if (!client) return 'connection ' + connection;
  var m = /^store-service mirror \((.*)\)$/.exec(client);
  if (m) return m[1];
  m = /^MeowCareTesting (.*)$/.exec(client);
  return m ? m[1] : client;
}
var deviceUsers = Object.assign({}, data.deviceUsers || {});
var laneOrder = ['cloud'];
function lane(name) { if (laneOrder.indexOf(name) < 0) laneOrder.push(name); return name; }

var events = [];
var bySeq = {};
var requests = data.requests || [];
var logical = requests.length === 0 && (data.logs || []).length === 0 && (data.frames || []).length === 0;

// The request log: each request on the cloud's lane, joined to the lane that sent it.
var shareOps = { 'shares.accept': 'accepted', 'shares.leave': 'left', 'participants.add': 'participant added',
  'participants.remove': 'participant removed', 'participants.setPermission': 'permission changed',
  'shares.setPublicPermission': 'public permission changed' };
var markerOps = { 'admin.injectFault': 'fault injected', 'admin.clearFaults': 'faults cleared', 'admin.setClock': 'clock changed',
  'admin.holdPushes': 'pushes held', 'admin.releasePushes': 'pushes released', 'admin.setAccountStatus': 'account status changed',
  'admin.expireChangeTokens': 'change tokens expired', 'admin.reset': 'cloud reset' };
requests.forEach(function (r) {
  var from = lane(laneOfClient(r.client, r.connection));
  if (r.user && /^store-service mirror/.test(r.client || '') && !deviceUsers[from]) deviceUsers[from] = r.user;
  var denied = (r.permissions || []).filter(function (d) { return d.decision === 'denied'; });
  // A share op's fact is labelled by the op (participant added, permission changed, …); a log
  // written before share ops had facts still shows them.
  var shares = (r.shares || []).map(function (s) {
    return { change: shareOps[r.op] || s.change, share: s.recordName, zone: s.zone, participants: s.participants };
  });
  if (r.code === 'ok' && shareOps[r.op] && !shares.length) shares.push({ change: shareOps[r.op], share: '', zone: (r.zones || [])[0] || '' });
  var ev = { t: r.time, lane: 'cloud', from: from, kind: 'request', op: r.op, user: r.user || '', outcome: r.code,
    ms: r.milliseconds, seq: r.seq, source: r, denied: denied, shares: shares, writes: r.writes || [],
    marker: markerOps[r.op] && r.code === 'ok' ? markerOps[r.op] : null };
  ev.records = (r.writes || []).map(function (w) { return w.recordName; })
    .concat((r.permissions || []).map(function (d) { return d.recordName; }).filter(Boolean));
  events.push(ev);
  bySeq[r.seq] = ev;
});

// The test clients' frames: calls to a device (a reply joined to its request) and events.
var firstRequest = requests.length ? requests[0].time : 0;
var frames = data.frames || [];
var frameBase = data.framesStart != null ? data.framesStart : (frames.length ? firstRequest - frames[0].time : 0);
var open = {};
frames.forEach(function (f) {
  // What the cloud side of a test client did is in the request log already.
  if (requests.length && /^cloud/.test(f.connection)) return;
  var body; try { body = JSON.parse(f.json); } catch (e) { body = { raw: f.json }; }
  // hello's reply names the service, not the op.
  var op = body.op || (f.direction === '←' && 'service' in body ? 'hello' : '');
  // A reply is joined to its request by id where the client numbers them, else by op in order.
  var at = frameBase + f.time, laneName = lane(f.connection), key = f.connection + ' ' + (body.id != null ? '#' + body.id : op);
  if (f.direction === '→') {
    var call = { t: at, lane: laneName, kind: 'call', op: body.op || '?', user: deviceUsers[f.connection] || '', outcome: 'pending',
      source: body, records: [], marker: /clock|fault/i.test(body.op || '') ? body.op : null };
    (open[key] = open[key] || []).push(call);
    events.push(call);
  } else if (f.direction === '←') {
    var pending = (open[key] || []).shift();
    if (pending) {
      pending.outcome = body.ok === false ? (body.error && body.error.code) || 'error' : 'ok';
      pending.ms = (at - pending.t) * 1000;
      pending.reply = body;
    }
  } else {
    events.push({ t: at, lane: laneName, kind: 'push', op: body.event || 'event', user: deviceUsers[f.connection] || '', outcome: 'event',
      source: body, records: [] });
  }
});

// The services' logs: conflicts, starts and exits, and what they warned about.
var conflicts = [];
var starts = {};
(data.logs || []).forEach(function (log) {
  var laneName = log.service === 'supervisor' ? null : lane(log.service);
  log.lines.forEach(function (line) {
    var at = line.ts ? Date.parse(line.ts) / 1000 : null;
    if (at == null || isNaN(at)) return;
    var msg = line.msg || '';
    if (msg === 'push received') {
      events.push({ t: at, lane: laneName, from: lane('cloud'), kind: 'push', op: 'push ' + (line.event || ''),
        user: deviceUsers[laneName] || '', outcome: 'event', source: line, records: [] });
    } else if (msg === 'conflict merged') {
      var c = { t: at, lane: laneName, kind: 'conflict', op: 'conflict ' + (line.recordType || ''), user: deviceUsers[laneName] || '',
        outcome: 'merged', source: line, records: [line.recordName], conflict: line };
      conflicts.push(c);
      events.push(c);
    } else if (log.service === 'supervisor') {
      var m = /^(\S+) exited/.exec(msg);
      if (m) events.push({ t: at, lane: lane(m[1]), kind: 'marker', op: 'exited', user: '', outcome: 'restart', marker: msg, source: line, records: [] });
    } else if (msg === 'killed' && line.by === 'MeowCareTesting') {
      // The test library's note that a signal ended the service (kill -9, a crash point).
      events.push({ t: at, lane: laneName, kind: 'marker', op: 'killed', user: deviceUsers[laneName] || '', outcome: 'killed',
        marker: laneName + ' killed (signal ' + line.signal + ')', source: line, records: [] });
    } else if (msg === 'cloud opened' || msg === 'connected to the sync-service') {
      // The cloud opens once per start; a mirror connects again after its restart, a kill of
      // the cloud or a lost connection.
      var again = starts[laneName] = (starts[laneName] || 0) + 1;
      var word = again === 1 ? 'started' : msg === 'cloud opened' ? 'restarted' : 'reconnected';
      events.push({ t: at, lane: laneName, kind: 'marker', op: word, user: deviceUsers[laneName] || '', outcome: word,
        marker: laneName + ' ' + word, source: line, records: [] });
    } else if (/^(notice|warning|error|critical)$/.test(line.level || '')) {
      events.push({ t: at, lane: laneName, kind: 'log', op: line.level, user: deviceUsers[laneName] || '', outcome: line.level,
        marker: msg, source: line, records: line.recordName ? [line.recordName] : [] });
    }
  });
});

// An explored run's history: each step on its actor's lane, joined to the requests it caused.
var history = data.history || [];
var byHistory = {};
history.forEach(function (h) {
  var linked = (h.cloudRequests || []).map(function (s) { return bySeq[s]; }).filter(Boolean);
  var at = logical ? h.invoke : (linked.length ? linked[0].t : null);
  var outcome = h.outcome || {};
  var ev = { t: at, lane: lane(h.actor), kind: 'history', op: h.op, user: h.user || '', index: h.index,
    outcome: outcome.kind === 'fail' ? outcome.code : outcome.kind === 'resolved' ? (outcome.committed ? 'committed' : 'lost') : outcome.kind,
    ms: null, steps: h.complete != null ? h.complete - h.invoke : null, source: h, records: [], linked: linked };
  linked.forEach(function (r) { r.historyIndex = h.index; });
  byHistory[h.index] = ev;
  events.push(ev);
});
// Steps without a request of their own stand just after the step before them.
var lastT = logical ? 0 : firstRequest;
history.forEach(function (h) { var ev = byHistory[h.index]; if (ev.t == null) ev.t = lastT; lastT = ev.t; });

events.forEach(function (ev, i) { ev.order = i; });
events.sort(function (a, b) { return (a.t - b.t) || (a.order - b.order); });
function searchText(ev, records) {
  return [ev.lane, ev.from, ev.op, ev.user, ev.outcome, ev.marker].concat(records).join(' ').toLowerCase();
}
// Each record's cloud version after each write, counted over the whole log (a view as one
// user shows the same numbers).
var versions = {};
events.forEach(function (ev) {
  ev.users = [ev.user, deviceUsers[ev.lane], deviceUsers[ev.from]].filter(Boolean);
  ev.refused = ev.denied && ev.denied.length > 0 || /permissionFailure|notAuthenticated/.test(ev.outcome || '');
  ev.text = searchText(ev, ev.records);
  if (ev.kind === 'request' && ev.outcome === 'ok') {
    ev.version = {};
    ev.writes.forEach(function (w) { ev.version[w.recordName] = versions[w.recordName] = (versions[w.recordName] || 0) + 1; });
  }
});

// Failed checks: each highlights the requests, steps and records it names.
var knownRecords = {};
events.forEach(function (ev) { ev.records.forEach(function (r) { knownRecords[r] = true; }); });
var failures = (data.failures || []).map(function (f, n) {
  var named = (f.records || []).slice();
  Object.keys(knownRecords).forEach(function (r) { if (named.indexOf(r) < 0 && (f.explanation || '').indexOf(r) >= 0) named.push(r); });
  var hits = events.filter(function (ev) {
    return (f.requests || []).indexOf(ev.seq) >= 0 || (f.entries || []).indexOf(ev.index) >= 0
      || (ev.historyIndex != null && (f.entries || []).indexOf(ev.historyIndex) >= 0)
      || ev.records.some(function (r) { return named.indexOf(r) >= 0; });
  });
  hits.forEach(function (ev) { ev.failed = true; });
  return { check: f.check || 'check', explanation: f.explanation || '', hits: hits };
});

// The page.
var state = { user: '', find: '', record: '', at: '' };
(location.hash.slice(1) || '').split('&').forEach(function (pair) {
  var kv = pair.split('=');
  if (kv[0] in state && kv[1] != null) state[kv[0]] = decodeURIComponent(kv[1]);
});
var users = {};
events.forEach(function (ev) { ev.users.forEach(function (u) { users[u] = true; }); });
var userSelect = document.getElementById('user');
Object.keys(users).sort().forEach(function (u) { userSelect.appendChild(el('option', { value: u, text: u })); });
userSelect.value = state.user;
document.getElementById('find').value = state.find;

// What one user could see (view as user): their own events whole; of other users' requests,
// the writes to their own zones and to the shares they were an accepted participant of at that
// time (just before or just after the request), and the changes of those shares. The request
// log's share facts name each share's participants after each change; each write names its
// share. Every event gets `v`: what of it the view shows (null: nothing).
function participates(s, user) {
  return (s.participants || []).some(function (p) {
    return p.user === user && p.acceptanceStatus === 'accepted' && p.permission !== 'none';
  });
}
function invited(s, user) {
  return (s.participants || []).some(function (p) { return p.user === user && p.acceptanceStatus === 'pending'; });
}
function ownerOf(zone) { var i = (zone || '').indexOf('/'); return i < 0 ? '' : zone.slice(0, i); }
function applyView(user) {
  var member = {};
  var requestsInOrder = events.filter(function (ev) { return ev.kind === 'request'; })
    .sort(function (a, b) { return a.seq - b.seq; });
  events.forEach(function (ev) {
    ev.v = !user || ev.users.indexOf(user) >= 0
      ? { records: ev.records, writes: ev.writes, shares: ev.shares, denied: ev.denied, text: ev.text, source: ev.source } : null;
  });
  if (!user) return;
  requestsInOrder.forEach(function (ev) {
    var before = {}, shares = [];
    (ev.shares || []).forEach(function (s) {
      if (!s.participants) return;
      var key = s.zone + ' ' + s.share, was = !!member[key], now = participates(s, user);
      if (!(key in before)) before[key] = was;
      member[key] = now;
      // The user sees the changes of a share while they read it, and their own invitation.
      if (was || now || invited(s, user)) shares.push(s);
    });
    if (ev.v) return;
    var writes = (ev.writes || []).filter(function (w) {
      var key = w.zone + ' ' + w.share;
      return ownerOf(w.zone) === user || w.share != null && (member[key] || before[key]);
    });
    if (!writes.length && !shares.length) return;
    var records = writes.map(function (w) { return w.recordName; });
    // Another user's request, shown only as far as the view reaches: their permission
    // decisions and the writes outside it are left out of its JSON too.
    var source = Object.assign({}, ev.source, { writes: writes, shares: ev.source.shares && ev.source.shares.filter(function (s) {
      return shares.some(function (x) { return x.zone === s.zone && x.share === s.recordName; });
    }), permissions: [] });
    var hidden = (ev.writes || []).length - writes.length;
    if (hidden) source.writesHidden = hidden;
    ev.v = { records: records, writes: writes, shares: shares, denied: [], text: searchText(ev, records), source: source };
  });
}
function visibleTo(ev) { return ev.v != null; }
function laneVisible(name) {
  return !state.user || name === 'cloud' || deviceUsers[name] === state.user
    || events.some(function (ev) { return (ev.lane === name || ev.from === name) && ev.users.indexOf(state.user) >= 0; });
}
function when(t) {
  if (logical) return 'step ' + t;
  var d = new Date(t * 1000);
  return d.toISOString().slice(11, 23);
}
function outcomeClass(ev) {
  if (ev.refused) return 'refused';
  if (ev.kind === 'conflict') return 'conflict';
  if (ev.kind === 'marker' || ev.marker) return 'marker';
  if (ev.shares && ev.shares.length) return 'share';
  if (ev.outcome === 'ok' || ev.outcome === 'event' || ev.outcome === 'committed') return 'ok';
  return 'error';
}
function summary(ev) {
  var v = ev.v || ev;
  var parts = [ev.op];
  if (ev.user) parts.push('by ' + ev.user);
  if (ev.from && ev.from !== ev.lane) parts.push('from ' + ev.from);
  parts.push('→ ' + ev.outcome);
  if (ev.ms != null) parts.push(ev.ms.toFixed(1) + ' ms');
  if (ev.steps != null) parts.push(ev.steps + ' steps');
  if (v.denied && v.denied.length) parts.push('denied: ' + v.denied[0].reason);
  if (v.shares && v.shares.length) parts.push('share ' + v.shares.map(function (s) { return s.change; }).join(', '));
  if (ev.marker) parts.push(ev.marker);
  if (ev.kind === 'conflict') parts.push(ev.conflict.recordName);
  return parts.join('  ');
}

var lanes = [], shown = [];
var head = document.getElementById('lanehead'), rows = document.getElementById('rows');
var scroller = document.getElementById('scroller'), spacer = document.getElementById('spacer');
function columns() { return '96px repeat(' + lanes.length + ', 112px) minmax(320px, 1fr)'; }
function layout() {
  lanes = laneOrder.filter(laneVisible);
  var find = state.find.toLowerCase();
  shown = events.filter(function (ev) { return visibleTo(ev) && lanes.indexOf(ev.lane) >= 0 && (!find || ev.v.text.indexOf(find) >= 0); });
  head.textContent = '';
  head.style.gridTemplateColumns = columns();
  head.appendChild(el('div', { cls: 'time', text: 'time (UTC)' }));
  lanes.forEach(function (name) {
    var who = deviceUsers[name] ? ' (' + deviceUsers[name] + ')' : '';
    head.appendChild(el('div', { cls: 'lane', 'data-lane': name, text: name + who }));
  });
  head.appendChild(el('div', { cls: 'what', text: 'what happened' }));
  spacer.style.height = (shown.length * ROW) + 'px';
  drawRows();
}
function drawRows() {
  var first = Math.max(0, Math.floor(scroller.scrollTop / ROW) - 10);
  var last = Math.min(shown.length, first + Math.ceil(scroller.clientHeight / ROW) + 20);
  rows.textContent = '';
  rows.style.top = (first * ROW) + 'px';
  for (var i = first; i < last; i++) rows.appendChild(row(shown[i]));
}
function row(ev) {
  var r = el('div', { cls: 'row ' + ev.kind + (ev.failed ? ' failed' : ''), onclick: function () { detail(ev); } });
  if (ev.seq != null) r.setAttribute('data-seq', String(ev.seq));
  r.style.gridTemplateColumns = columns();
  r.appendChild(el('div', { cls: 'time', text: when(ev.t) }));
  var at = lanes.indexOf(ev.lane), from = ev.from ? lanes.indexOf(ev.from) : -1;
  if (from >= 0 && from !== at) {
    var a = Math.min(at, from), b = Math.max(at, from);
    var join = el('div', { cls: 'join' });
    join.style.gridColumn = (a + 2) + ' / ' + (b + 3);
    join.style.gridRow = '1';
    r.appendChild(join);
    var origin = el('div', { cls: 'mark origin ' + outcomeClass(ev), text: ev.op });
    origin.style.gridColumn = String(from + 2);
    origin.style.gridRow = '1';
    r.appendChild(origin);
  }
  var mark = el('div', { cls: 'mark ' + outcomeClass(ev), title: summary(ev), text: ev.kind === 'conflict' ? 'conflict' : ev.op });
  mark.style.gridColumn = String(at + 2);
  mark.style.gridRow = '1';
  r.appendChild(mark);
  var what = el('div', { cls: 'what', text: summary(ev) });
  what.style.gridColumn = String(lanes.length + 2);
  what.style.gridRow = '1';
  r.appendChild(what);
  return r;
}
var scheduled = false;
scroller.addEventListener('scroll', function () {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(function () { scheduled = false; drawRows(); });
});

function conflictTable(c) {
  var names = {};
  [c.server, c.client, c.ancestor, c.kept].forEach(function (side) { if (side) for (var k in side) names[k] = true; });
  var table = el('table', { cls: 'conflict' },
    el('tr', null, el('th', { text: 'field' }), el('th', { text: 'server' }), el('th', { text: 'client' }),
      el('th', { text: 'ancestor' }), el('th', { text: 'kept' })));
  Object.keys(names).sort().forEach(function (k) {
    var kept = show(c.kept ? c.kept[k] : undefined), server = show(c.server ? c.server[k] : undefined);
    var client = show(c.client ? c.client[k] : undefined);
    var winner = kept === server ? (kept === client ? 'both' : 'server') : kept === client ? 'client' : 'neither';
    table.appendChild(el('tr', { cls: server === client ? 'same' : 'differs' }, el('td', { text: k }),
      el('td', { cls: 'server', text: show(c.server ? c.server[k] : undefined) }),
      el('td', { cls: 'client', text: show(c.client ? c.client[k] : undefined) }),
      el('td', { cls: 'ancestor', text: c.ancestor ? show(c.ancestor[k]) : '(unknown)' }),
      el('td', { cls: 'kept ' + winner, text: kept })));
  });
  return table;
}
function detail(ev) {
  var box = document.getElementById('detail');
  box.textContent = '';
  box.appendChild(el('h3', { text: summary(ev) }));
  var source = (ev.v || ev).source;
  if (ev.denied) (source.permissions || []).forEach(function (d) {
    box.appendChild(el('div', { cls: 'decision ' + d.decision }, d.decision + ': ' + d.reason + (d.recordName ? ' (record ' + d.recordName + ')' : '')));
  });
  if (ev.conflict) box.appendChild(conflictTable(ev.conflict));
  box.appendChild(el('pre', { text: JSON.stringify(ev.reply ? { request: source, reply: ev.reply } : source, null, 2) }));
}

function listSection(id, items, render, empty) {
  var box = document.getElementById(id);
  box.textContent = '';
  if (!items.length) { box.appendChild(el('p', { cls: 'none', text: empty })); return; }
  items.slice(0, MAX_LIST).forEach(function (item) { box.appendChild(render(item)); });
  if (items.length > MAX_LIST) box.appendChild(el('p', { cls: 'none', text: (items.length - MAX_LIST) + ' more: narrow with Find' }));
}
function pick(ev) { return el('a', { href: '#', cls: 'at', text: when(ev.t), onclick: function (e) { e.preventDefault(); reveal(ev); } }); }
function reveal(ev) {
  var i = shown.indexOf(ev);
  if (i >= 0) scroller.scrollTop = Math.max(0, i * ROW - 3 * ROW);
  drawRows();
  detail(ev);
}

function sections() {
  var find = state.find.toLowerCase();
  var mine = events.filter(function (ev) { return visibleTo(ev) && (!find || ev.v.text.indexOf(find) >= 0); });
  listSection('refusal-list', mine.filter(function (ev) { return ev.refused; }), function (ev) {
    var decisions = ev.v.denied && ev.v.denied.length ? ev.v.denied : [{ decision: 'denied', reason: ev.outcome }];
    return el('div', { cls: 'refusal' + (ev.failed ? ' failed' : '') }, pick(ev), ' ',
      el('b', { text: ev.op }), ' by ' + (ev.user || '?') + ' from ' + (ev.from || ev.lane) + ' → ' + ev.outcome,
      el('ul', null, decisions.map(function (d) {
        return el('li', { cls: 'reason', text: d.decision + ': ' + d.reason + (d.zone ? ' (zone ' + d.zone + (d.recordName ? ', record ' + d.recordName : '') + ')' : '') });
      }).reduce(function (f, li) { f.appendChild(li); return f; }, document.createDocumentFragment())));
  }, 'No request was refused.');
  listSection('conflict-list', mine.filter(function (ev) { return ev.kind === 'conflict'; }), function (ev) {
    var c = ev.conflict;
    return el('div', { cls: 'conflict-item' + (ev.failed ? ' failed' : '') }, pick(ev), ' ',
      el('b', { text: c.recordType + ' ' + c.recordName }), ' on ' + ev.lane + ' (zone ' + c.zone + ', policy ' + c.policy + ')',
      conflictTable(c));
  }, 'No conflict was merged.');
  var shareRows = [];
  mine.forEach(function (ev) { (ev.v.shares || []).forEach(function (s) { shareRows.push({ ev: ev, s: s }); }); });
  listSection('share-list', shareRows, function (x) {
    return el('div', { cls: 'share-item' }, pick(x.ev), ' ', el('b', { text: x.s.change }),
      ' share ' + (x.s.share || '') + ' in ' + (x.s.zone || '?') + ' by ' + (x.ev.user || '?') + ' from ' + (x.ev.from || x.ev.lane));
  }, 'No share changed.');
  recordView(mine);
}

function recordView(mine) {
  var names = {};
  mine.forEach(function (ev) { ev.v.records.forEach(function (r) { names[r] = true; }); });
  var select = document.getElementById('record');
  var list = Object.keys(names).sort();
  select.textContent = '';
  select.appendChild(el('option', { value: '', text: list.length + ' records: pick one' }));
  list.forEach(function (r) { select.appendChild(el('option', { value: r, text: r })); });
  select.value = state.record;
  var box = document.getElementById('record-view');
  box.textContent = '';
  if (!state.record) return;
  var table = el('table', { cls: 'versions' }, el('tr', null, el('th', { text: 'time' }), el('th', { text: 'where' }),
    el('th', { text: 'version' }), el('th', { text: 'by' }), el('th', { text: 'what' })));
  mine.filter(function (ev) { return ev.v.records.indexOf(state.record) >= 0; }).forEach(function (ev) {
    var what, where = ev.lane;
    var write = (ev.v.writes || []).filter(function (w) { return w.recordName === state.record; })[0];
    if (ev.kind === 'conflict') {
      what = 'merged; kept ' + show(ev.conflict.kept);
    } else if (write && ev.outcome === 'ok') {
      what = write.action === 'deleted' ? 'deleted' : 'saved; changed ' + ((write.changed || []).join(', ') || 'no field');
    } else if (ev.v.denied && ev.v.denied.length) {
      what = 'refused: ' + ev.v.denied.map(function (d) { return d.reason; }).join('; ');
    } else {
      what = ev.op + ' → ' + ev.outcome;
    }
    table.appendChild(el('tr', { cls: ev.failed ? 'failed' : '' }, el('td', null, pick(ev)), el('td', { text: where }),
      el('td', { text: ev.kind === 'request' && write && ev.outcome === 'ok' ? 'cloud v' + ev.version[state.record] : ev.kind === 'conflict' ? ev.lane + ' merge' : '' }),
      el('td', { text: (ev.user || '?') + (ev.from && ev.from !== ev.lane ? ' via ' + ev.from : '') }), el('td', { text: what })));
  });
  box.appendChild(table);
}

function failureBanner() {
  var box = document.getElementById('failures');
  box.textContent = '';
  if (!failures.length) { box.hidden = true; return; }
  failures.forEach(function (f) {
    var at = el('span', { cls: 'hits' });
    f.hits.slice(0, 20).forEach(function (ev) { at.appendChild(pick(ev)); at.appendChild(document.createTextNode(' ')); });
    box.appendChild(el('div', { cls: 'failure' }, el('b', { text: 'Failed: ' + f.check }), ' ' + f.explanation + ' ',
      f.hits.length ? 'at ' : '(names no request) ', at));
  });
}

function refresh() {
  var hash = [];
  for (var k in state) if (state[k]) hash.push(k + '=' + encodeURIComponent(state[k]));
  try { window.history.replaceState(null, '', hash.length ? '#' + hash.join('&') : location.pathname); } catch (e) { }
  layout();
  sections();
}
userSelect.onchange = function () { state.user = userSelect.value; applyView(state.user); refresh(); };
document.getElementById('find').oninput = function (e) { state.find = e.target.value; refresh(); };
document.getElementById('record').onchange = function (e) { state.record = e.target.value; refresh(); };

var refusals = events.filter(function (ev) { return ev.refused; }).length;
document.getElementById('summary').textContent = requests.length + ' requests, ' + history.length + ' history steps, '
  + refusals + ' refusals, ' + conflicts.length + ' conflicts, ' + laneOrder.length + ' lanes';
failureBanner();
applyView(state.user);
layout();
sections();
// #at=N opens the timeline scrolled to its N-th row.
if (state.at) { scroller.scrollTop = Number(state.at) * ROW; drawRows(); }
var loaded = Math.round(performance.now());
document.body.setAttribute('data-loaded-ms', String(loaded));
document.getElementById('stats').textContent = events.length + ' events shown in ' + loaded + ' ms';
})();
