import { startTestBroker, type TestBroker } from '../helpers/broker';

describe('pool API smoke', () => {
  let tb: TestBroker;
  beforeAll(async () => {
    tb = await startTestBroker();
  });
  afterAll(async () => {
    await tb.close();
  });

  it('runs the pool API quick example', async () => {
    const id = await tb.acquire();
    await tb.exec(id, 'cd /tmp && export MY_VAR=hello');
    const r = await tb.exec(id, 'pwd && echo $MY_VAR');
    expect(r).toEqual({ status: 'Success', stdout: '/tmp\nhello\n', stderr: '', return_code: 0 });
    expect((await tb.post(`/session/${id}/release`)).json).toEqual({ status: 'released' });
  });
});
