/**
 * The terminal page's script (runs in the browser; plain ES2017, no build step). It reads the
 * recent events, then follows both sockets; a 401 asks for the token once.
 */
export const WORKSPACE_PAGE_SCRIPT = String.raw`
(function () {
  var base = document.body.dataset.base;
  var wsBase = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + base;
  var token = sessionStorage.getItem('brokerToken') || '';
  var list = document.getElementById('events');

  function headers() { return token ? { Authorization: 'Bearer ' + token } : {}; }
  function protocols() { return token ? ['bearer.' + token] : []; }
  function show(text, cls) {
    var li = document.createElement('li');
    li.textContent = text;
    li.className = cls;
    list.appendChild(li);
    while (list.children.length > 500) list.removeChild(list.firstChild);
    list.scrollTop = list.scrollHeight;
  }
  function onEvent(e) {
    if (e.type === 'command') show('$ ' + e.command + '  [' + e.source + ']', 'command');
    else if (e.type === 'exit') show('exit ' + e.returncode + ' (' + e.duration_ms + ' ms)', e.returncode === 0 ? 'exit-ok' : 'exit-failed');
    else if (e.type !== 'output') show(e.type + (e.reason ? ': ' + e.reason : ''), 'notice');
  }

  function start(next) {
    var term = new Terminal({ convertEol: false, scrollback: 5000 });
    var fit = new FitAddon.FitAddon();
    term.loadAddon(fit);
    term.open(document.getElementById('terminal'));
    var socket = new WebSocket(wsBase + '/ws/workspace/terminal', protocols());
    socket.binaryType = 'arraybuffer';
    function resize() {
      fit.fit();
      if (socket.readyState === 1) socket.send(JSON.stringify({ type: 'resize', cols: term.cols, rows: term.rows }));
    }
    socket.onopen = resize;
    socket.onmessage = function (m) { term.write(new Uint8Array(m.data)); };
    socket.onclose = function () { show('terminal disconnected', 'notice'); };
    term.onData(function (data) { if (socket.readyState === 1) socket.send(JSON.stringify({ type: 'input', data: data })); });
    window.addEventListener('resize', resize);
    window.workspaceTerminal = term;

    var events = new WebSocket(wsBase + '/ws/workspace?since=' + next, protocols());
    events.onmessage = function (m) { onEvent(JSON.parse(m.data)); };
    events.onclose = function () { show('event stream disconnected', 'notice'); };
  }

  function load() {
    fetch(base + '/api/workspace/logs?offset=-200&limit=200', { headers: headers() }).then(function (r) {
      if (r.status === 401) {
        token = window.prompt('Access token (BROKER_TOKEN)') || '';
        sessionStorage.setItem('brokerToken', token);
        return load();
      }
      if (!r.ok) return r.text().then(function (t) { show('cannot open the workspace: ' + t, 'notice'); });
      var next = Number(r.headers.get('X-Workspace-Log-Next'));
      return r.json().then(function (events) {
        events.forEach(function (e) { if (e.seq_id !== undefined) onEvent(e); });
        start(next);
      });
    });
  }
  load();
})();
`;
