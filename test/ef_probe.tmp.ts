import Dockerode from 'dockerode';
import { runFsScript } from '../src/backends/docker/containerFsExec';
(async () => {
  const c = new Dockerode().getContainer('ef-execd-files-probe2');
  const e = await c.exec({ Cmd: ['bash', '-c', 'mkdir -p /tmp/s/x/d; echo hi > /tmp/s/x/d/f'] });
  await e.start({});
  await new Promise((r) => setTimeout(r, 500));
  console.log(JSON.stringify(await runFsScript(c, 'stat', '/tmp/s/x', ['/tmp/s/x/d/f'])));
})();
