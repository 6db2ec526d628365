/*
 * reap(pid): waitpid(pid, WNOHANG) for one zombie, from Node. The confined broker of the local abuse
 * suite is pid 1 of its namespace (so `kill -9 -1` inside cannot kill it), and pid 1 inherits every
 * orphan; libuv waits only for the children it spawned, so orphans would stay zombies and eat the
 * pids limit. initReaper.ts calls this for zombie children that libuv does not own. Built at test
 * time: gcc -shared -fPIC -I/usr/include/node initReaper.c -o initReaper.node
 */
#include <node_api.h>
#include <sys/types.h>
#include <sys/wait.h>

static napi_value Reap(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  int32_t pid = 0;
  int status = 0;
  napi_value result;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_get_value_int32(env, argv[0], &pid) != napi_ok || pid <= 0) pid = -2;
  /* Never waitpid(-1) or a group: that would steal the exit status of libuv's own children. */
  napi_create_int32(env, pid > 0 ? (int32_t)waitpid((pid_t)pid, &status, WNOHANG) : -1, &result);
  return result;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  napi_create_function(env, "reap", NAPI_AUTO_LENGTH, Reap, NULL, &fn);
  napi_set_named_property(env, exports, "reap", fn);
  return exports;
}
