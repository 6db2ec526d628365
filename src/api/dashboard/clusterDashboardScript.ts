/**
 * The cluster dashboard's script (runs in the browser; plain ES2017, no build step). It reads the
 * gateway's /health once a second and redraws: the cluster's totals, every pool's, and one row per
 * node. /health is answered from the gateway's memory (no node is asked), so reading it each
 * second costs the cluster nothing; a gateway forwards no WebSocket, so the page polls.
 */
import { DASHBOARD_HELPERS } from './dashboardHelpers';

export const CLUSTER_DASHBOARD_SCRIPT = String.raw`
(function () {
  'use strict';
  var EVERY_MS = 1000;
  var STATES = [['available', 'A'], ['in_use', 'U'], ['cleaning', 'C'], ['broken', 'B']];
${DASHBOARD_HELPERS}  function age(ms) { return ms < 1000 ? ms + ' ms' : (ms / 1000).toFixed(1) + ' s'; }
  function none() { return { total: 0, available: 0, in_use: 0, cleaning: 0, broken: 0 }; }
  function cells(tr, values) { values.forEach(function (v) { tr.appendChild(el('td', v)); }); }
  function counts(c) { return [c.available, c.in_use, c.cleaning, c.broken, c.total]; }

  /** One bar, each state's share of the node's sessions in its colour. */
  function bar(c) {
    var b = el('div', null, 'bar');
    b.title = STATES.map(function (s) { return c[s[0]] + ' ' + s[0].replace('_', ' '); }).join(', ');
    STATES.forEach(function (s) {
      if (!c[s[0]]) return;
      var part = el('span', null, 's-' + s[1]);
      part.style.flexGrow = c[s[0]];
      b.appendChild(part);
    });
    return b;
  }

  function render(h) {
    setStatus(h.status);
    $('store').textContent = h.store_connected ? '' : 'store away: routing by the last membership';
    $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
    var serving = h.nodes.filter(function (n) { return n.health !== 'unhealthy'; }).length;
    figures($('cluster-figures'), [['nodes', h.nodes.length, 'cluster-nodes'], ['serving', serving, 'cluster-serving'], ['available', h.available_sessions, 'cluster-available'],
      ['in use', h.in_use_sessions, 'cluster-in-use'], ['cleaning', h.cleaning_sessions, 'cluster-cleaning'], ['broken', h.broken_sessions, 'cluster-broken'],
      ['total', h.total_sessions, 'cluster-total']]);

    var pools = clear($('pool-rows'));
    Object.keys(h.pools).sort().forEach(function (name) {
      var tr = el('tr');
      tr.dataset.pool = name;
      cells(tr, [name].concat(counts(h.pools[name])));
      pools.appendChild(tr);
    });

    $('node-count').textContent = h.nodes.length + (h.nodes.length === 1 ? ' node' : ' nodes');
    var rows = clear($('node-rows'));
    if (h.nodes.length === 0) {
      var empty = el('tr');
      var td = el('td', 'no node is registered', 'muted');
      td.colSpan = 11;
      empty.appendChild(td);
      rows.appendChild(empty);
    }
    h.nodes.forEach(function (n) {
      var main = n.pools['default'] || none();
      var tr = el('tr');
      tr.dataset.node = n.node_id;
      tr.appendChild(el('td', n.node_id, 'id'));
      var health = el('td');
      health.appendChild(el('span', null, 'dot' + (n.health === 'healthy' ? '' : n.health === 'degraded' ? ' replacing' : ' bad')));
      health.appendChild(document.createTextNode(n.health));
      tr.appendChild(health);
      tr.appendChild(el('td', n.address, 'id'));
      cells(tr, [age(n.heartbeat_age_ms)].concat(counts(main)));
      var slots = el('td');
      slots.appendChild(bar(main));
      tr.appendChild(slots);
      var others = Object.keys(n.pools).filter(function (p) { return p !== 'default'; }).sort();
      tr.appendChild(el('td', others.map(function (p) { return p + ' ' + n.pools[p].available + '/' + n.pools[p].total; }).join(', ') || '-', 'muted'));
      rows.appendChild(tr);
    });
  }

  function poll() {
    fetch('/health', { cache: 'no-store' })
      .then(function (r) { return r.json(); })
      .then(render)
      .catch(function () { setStatus('offline'); })
      .then(function () { setTimeout(poll, EVERY_MS); });
  }
  poll();
})();
`;
