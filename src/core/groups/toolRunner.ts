/**
 * How a tool runs: the sandbox's own python3 runs this script with the tool's file and name; the
 * action's `args` arrive as JSON on stdin (an object: keyword arguments; anything else: the one
 * argument). What the function returns is printed: a string as it is, anything else as JSON.
 * Its own prints go to stdout and stderr as usual; an exception's traceback goes to stderr, exit 1.
 */

/** Where the runner is placed in the sandbox's files directory. */
export const TOOL_RUNNER_FILE = 'run_tool.py';
export const TOOLS_SUBDIR = 'tools';

export const TOOL_RUNNER_PY = `import importlib.util, json, os, sys
path, name = sys.argv[1], sys.argv[2]
raw = sys.stdin.readline()
try:
    args = json.loads(raw) if raw.strip() else {}
except ValueError as err:
    sys.stderr.write("tool %s: its args are not JSON: %s\\n" % (name, err)); sys.exit(2)
sys.path.insert(0, os.path.dirname(path))
spec = importlib.util.spec_from_file_location(name, path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
fn = getattr(module, name, None)
if not callable(fn):
    sys.stderr.write("tool %s: %s defines no function '%s'\\n" % (name, path, name)); sys.exit(2)
result = fn(**args) if isinstance(args, dict) else fn(args)
if result is not None:
    sys.stdout.write(result if isinstance(result, str) else json.dumps(result))
sys.stdout.flush()
`;
