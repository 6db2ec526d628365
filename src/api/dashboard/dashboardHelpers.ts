/**
 * Functions both dashboards' scripts use (browser code, plain ES2017), spliced into each script's
 * own scope: the standalone broker's (dashboardScript.ts) and a gateway's (clusterDashboardScript.ts).
 */
export const DASHBOARD_HELPERS = String.raw`
  function $(id) { return document.getElementById(id); }
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function figures(node, items) {
    clear(node);
    items.forEach(function (item) {
      var f = el('div', null, 'figure');
      var b = el('b', item[1]);
      b.id = item[2];
      f.appendChild(b);
      f.appendChild(el('span', item[0]));
      node.appendChild(f);
    });
  }
  function setStatus(s) { var e = $('status'); e.textContent = s; e.className = s; }
`;
