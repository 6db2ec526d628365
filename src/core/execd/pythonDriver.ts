/**
 * The program a python code context runs (`python3 -u -c`): a persistent interpreter whose globals
 * live across cells. It reads one JSON request a line, `{"nonce", "code"}`, from a private copy of
 * its stdin (the cell's own stdin is /dev/null, so input() cannot eat the protocol) and frames each
 * cell as the bash framing does (framing.ts): `<nonce>s` on stdout and stderr before, `<nonce>e` on
 * stderr after, and on stdout `<nonce>e` followed by the cell's outcome as one line of JSON:
 * `{"count", "result"?}` (the repr of a last expression that is not None, as a REPL shows it) or
 * `{"count", "error": {"ename", "evalue", "traceback"}}`. Lines that are not a request (an interrupt's
 * end-marker request, timeoutEscalation.ts) are skipped. SIGINT raises KeyboardInterrupt only while a
 * cell runs: a late ^C between cells is ignored rather than ending the interpreter.
 * Tracebacks start at the cell (the driver's own frames are cut) and name it "<stdin>".
 */
export const PYTHON_READY = '__bkpy_ready';
export const PYTHON_MISSING = '__bkpy_missing';

/** Characters of a result's repr kept at most (the rest would only weigh on the stream). */
const MAX_RESULT_CHARS = 1 << 20;

export const PYTHON_DRIVER = `
import ast, json, os, signal, sys, traceback
def _bk_error(e, tb):
    while tb is not None and tb.tb_frame.f_code.co_filename != '<stdin>':
        tb = tb.tb_next
    text = ''.join(traceback.format_exception(type(e), e, tb)).rstrip('\\n')
    return {'ename': type(e).__name__, 'evalue': str(e), 'traceback': text.split('\\n')}
def _bk_cell(code, ns, running):
    try:
        tree = ast.parse(code, '<stdin>', 'exec')
    except SyntaxError as e:
        return {'error': _bk_error(e, None)}
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    value = None
    running[0] = True
    try:
        exec(compile(tree, '<stdin>', 'exec'), ns)
        if last is not None:
            value = eval(compile(last, '<stdin>', 'eval'), ns)
    except BaseException as e:
        return {'error': _bk_error(e, e.__traceback__)}
    finally:
        running[0] = False
    if value is None:
        return {}
    ns['_'] = value
    return {'result': repr(value)[:${MAX_RESULT_CHARS}]}
def _bk_serve():
    proto = os.fdopen(os.dup(0), 'rb')
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    ns = {'__name__': '__main__', '__builtins__': __builtins__}
    running = [False]
    def on_sigint(signum, frame):
        if running[0]:
            raise KeyboardInterrupt
    signal.signal(signal.SIGINT, on_sigint)
    count = 0
    os.write(1, b'\\n${PYTHON_READY}\\n')
    for line in proto:
        try:
            req = json.loads(line)
            nonce = req['nonce'].encode('ascii')
            code = req['code']
        except Exception:
            continue
        count += 1
        os.write(1, nonce + b's')
        os.write(2, nonce + b's')
        outcome = {'count': count}
        try:
            outcome.update(_bk_cell(code, ns, running))
        except BaseException as e:
            outcome['error'] = _bk_error(e, None)
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except BaseException:
                pass
        os.write(2, nonce + b'e\\n')
        os.write(1, nonce + b'e' + json.dumps(outcome).encode() + b'\\n')
_bk_serve()
`;
