/**
 * The dashboard's script (runs in the browser; plain ES2017, no build step). It reads the state once
 * (a 401 asks for the token), then follows /admin/live: every frame redraws the page. Actions ask
 * for confirmation, then POST to /admin. A lost feed reconnects; nothing polls.
 */
import { DASHBOARD_HELPERS } from './dashboardHelpers';

export const DASHBOARD_SCRIPT = String.raw`
(function () {
  'use strict';
  var token = sessionStorage.getItem('brokerToken') || '';
  var last = null;
${DASHBOARD_HELPERS}  function headers() {
    var h = { 'Content-Type': 'application/json' };
    if (token) h.Authorization = 'Bearer ' + token;
    return h;
  }
  function notice(text) { var n = $('notice'); n.textContent = text || ''; n.style.display = text ? 'block' : 'none'; }
  function seconds(s) {
    if (s === null || s === undefined) return '-';
    if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + ' s';
    if (s < 3600) return (s / 60).toFixed(1) + ' min';
    return (s / 3600).toFixed(1) + ' h';
  }
  function millis(ms) {
    if (ms === null || ms === undefined) return '-';
    if (ms < 1) return ms.toFixed(2) + ' ms';
    if (ms < 1000) return ms.toFixed(ms < 10 ? 1 : 0) + ' ms';
    return (ms / 1000).toFixed(2) + ' s';
  }
  function sum(a) { return a.reduce(function (x, y) { return x + y; }, 0); }
  function spark(svg, series) {
    clear(svg);
    var max = 1;
    series.forEach(function (s) { s.values.forEach(function (v) { if (v > max) max = v; }); });
    series.forEach(function (s) {
      var line = document.createElementNS('http://www.w3.org/2000/svg', 'polyline');
      var n = s.values.length;
      line.setAttribute('points', s.values.map(function (v, i) { return (n < 2 ? 0 : (i * 60) / (n - 1)).toFixed(2) + ',' + (38 - (v / max) * 36).toFixed(2); }).join(' '));
      if (s.cls) line.setAttribute('class', s.cls);
      svg.appendChild(line);
    });
  }

  function act(path, question, row) {
    if (!window.confirm(question)) return;
    fetch(path, { method: 'POST', headers: headers(), body: '{}' }).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) return notice((body && body.detail) || 'failed: HTTP ' + r.status);
        notice('');
        if (row && row.parentNode) row.parentNode.removeChild(row);
      });
    }, function (e) { notice('failed: ' + e); });
  }
  function button(text, cls, onClick) {
    var b = el('button', text, cls);
    b.type = 'button';
    b.onclick = onClick;
    return b;
  }
  function list(node, items, line) {
    clear(node);
    if (items.length === 0) node.appendChild(el('li', 'none', 'muted'));
    items.forEach(function (item) { node.appendChild(line(item)); });
  }
  function logLine(at, text) {
    var li = el('li');
    var t = el('time', new Date(at).toLocaleTimeString());
    t.setAttribute('datetime', at);
    li.appendChild(t);
    li.appendChild(document.createTextNode(text));
    return li;
  }

  function render(f) {
    last = f;
    setStatus(f.status);
    $('updated').textContent = 'updated ' + new Date(f.at).toLocaleTimeString();
    var p = f.pool;
    var several = f.pools.length > 1;
    figures($('pool-figures'), [['available', p.available, 'pool-available'], ['in use', p.in_use, 'pool-in-use'], ['cleaning', p.cleaning, 'pool-cleaning'], ['broken', p.broken, 'pool-broken'], ['total / target', p.total + ' / ' + p.target, 'pool-total']]);
    list($('pool-list'), several ? f.pools : [], function (x) { return el('li', x.name + ': ' + x.available + ' available, ' + x.in_use + ' in use, ' + x.broken + ' broken of ' + x.target + (x.waiting ? ', ' + x.waiting + ' waiting' : '')); });
    $('pool-list').style.display = several ? '' : 'none';
    var q = f.queue;
    figures($('queue-figures'), [['waiting', q.waiting, 'queue-waiting'], ['wait p50 (10 s)', millis(q.wait_p50_ms), 'queue-p50'], ['wait p99 (10 s)', millis(q.wait_p99_ms), 'queue-p99'], ['503s (1 min)', sum(q.timeouts_per_second), 'queue-timeouts']]);
    spark($('queue-spark'), [{ values: q.acquires_per_second }, { values: q.timeouts_per_second, cls: 'bad' }]);
    var x = f.execute;
    var perSecond = x.per_second.length ? x.per_second[x.per_second.length - 1] : 0;
    figures($('execute-figures'), [['executes', x.total, 'executes-total'], ['per second', perSecond, 'executes-rate'], ['p50 (10 s)', millis(x.p50_ms), 'execute-p50'], ['p99 (10 s)', millis(x.p99_ms), 'execute-p99'], ['failed (1 min)', sum(x.failed_per_second), 'execute-failed']]);
    spark($('execute-spark'), [{ values: x.per_second }, { values: x.failed_per_second, cls: 'bad' }]);

    var rows = clear($('container-rows'));
    f.containers.forEach(function (c) {
      var tr = el('tr');
      tr.dataset.container = c.index;
      tr.dataset.pool = c.pool;
      tr.appendChild(el('td', several ? c.pool + ' ' + c.index : c.index));
      var health = el('td');
      health.appendChild(el('span', null, 'dot' + (c.replacing ? ' replacing' : c.healthy ? '' : ' bad')));
      health.appendChild(document.createTextNode(c.replacing ? 'replacing' : c.healthy ? 'healthy' : 'unhealthy: ' + (c.reason || '')));
      tr.appendChild(health);
      var slots = el('td');
      var box = el('div', null, 'slots');
      c.slots.split('').forEach(function (s) { var d = el('span', null, 'slot s-' + s); d.title = { A: 'available', U: 'in use', C: 'cleaning', B: 'broken' }[s]; box.appendChild(d); });
      slots.appendChild(box);
      tr.appendChild(slots);
      var actions = el('td');
      if (!c.replacing) actions.appendChild(button('Replace', 'replace', function () { act('/admin/containers/' + c.index + '/replace?pool=' + encodeURIComponent(c.pool), 'Replace container ' + c.index + ' of pool ' + c.pool + '? Its leases break (their holders get 410) and its sessions are rebuilt.'); }));
      tr.appendChild(actions);
      rows.appendChild(tr);
    });

    $('lease-count').textContent = f.leases.count + (f.leases.count > f.leases.items.length ? ' (oldest ' + f.leases.items.length + ' shown)' : '');
    var leases = clear($('lease-rows'));
    f.leases.items.forEach(function (l) {
      var tr = el('tr');
      tr.dataset.sessionId = l.session_id;
      var id = el('td', l.session_id.slice(0, 12), 'id');
      id.title = l.session_id;
      tr.appendChild(id);
      tr.appendChild(el('td', l.holder));
      tr.appendChild(el('td', (several ? l.pool + ' ' : '') + (l.container === null ? '-' : l.container + ' (' + l.slot + ')')));
      tr.appendChild(el('td', seconds(l.age_s)));
      tr.appendChild(el('td', seconds(l.idle_s)));
      tr.appendChild(el('td', l.lease_ttl_s === null ? '-' : seconds(l.lease_ttl_s)));
      tr.appendChild(el('td', l.broken ? 'broken: ' + l.broken : l.executing ? 'executing' : 'idle'));
      var actions = el('td');
      if (l.holder === 'client') {
        actions.appendChild(button('Release', 'release', function () { act('/admin/leases/' + encodeURIComponent(l.session_id) + '/release', 'Release session ' + l.session_id + '? Its holder loses it.', tr); }));
        actions.appendChild(button('Reclaim', 'reclaim', function () { act('/admin/leases/' + encodeURIComponent(l.session_id) + '/reclaim', 'Reclaim session ' + l.session_id + '? Its holder is told it was reclaimed.', tr); }));
      }
      tr.appendChild(actions);
      leases.appendChild(tr);
    });
    if (f.leases.items.length === 0) { var none = el('tr'); none.appendChild(el('td', 'no leases', 'muted')); leases.appendChild(none); }

    list($('error-list'), f.errors, function (e) { return logLine(e.at, e.kind + ': ' + e.message); });
    list($('replaced-list'), f.replaced, function (r) { return logLine(r.at, 'container ' + r.container + (several ? ' of pool ' + r.pool : '') + ': ' + r.reason); });
    list($('workspace-list'), f.workspaces, function (w) { return el('li', w.workspace_id + '  ' + w.workdir + (w.running_job_id ? '  running ' + w.running_job_id : '  idle')); });
    list($('sandbox-list'), f.sandboxes, function (s) { return el('li', s.kind + ' ' + s.id + ': ' + s.detail); });
    list($('image-list'), f.images || [], function (i) {
      var mib = i.disk_bytes === null ? '' : ', ' + (i.disk_bytes / 1048576).toFixed(1) + ' MiB';
      return el('li', i.image + ': ' + i.state + mib + ', ' + i.containers + ' containers, ' + i.warm_sessions + ' warm, ' + i.leased_sessions + ' leased');
    });
  }

  function connect() {
    var url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/admin/live';
    var socket = new WebSocket(url, token ? ['bearer.' + token] : []);
    socket.onopen = function () { notice(''); };
    socket.onmessage = function (m) { var msg = JSON.parse(m.data); if (msg.type === 'frame') render(msg.frame); };
    socket.onclose = function () { setStatus('offline'); notice('live feed lost: reconnecting'); setTimeout(start, 2000); };
  }
  function start() {
    fetch('/admin/state', { headers: headers() }).then(function (r) {
      if (r.status === 401) {
        token = window.prompt('Access token (BROKER_TOKEN)') || '';
        sessionStorage.setItem('brokerToken', token);
        return start();
      }
      if (!r.ok) return r.text().then(function (t) { notice('cannot read the state: ' + t); });
      return r.json().then(function (frame) { render(frame); connect(); });
    }, function (e) { setStatus('offline'); notice('cannot reach the broker: ' + e); setTimeout(start, 3000); });
  }
  window.brokerDashboard = { frame: function () { return last; } };
  start();
})();
`;
