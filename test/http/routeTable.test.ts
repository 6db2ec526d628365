/**
 * Route matching: literal segments before parameters, one trailing slash and the query ignored, parameters decoded.
 * @backend any
 */
import { BadParamEncodingError, RouteTable, formatForPath, splitTarget } from '../../src/http/routeTable';
import { openSandboxErrorFormat, poolErrorFormat } from '../../src/http/errorFormats';
import { BadRequestError } from '../../src/common/errors';
import type { Router } from '../../src/http/router';

/** Each router with an error format of its own, so that a test can tell which one answered. */
const router = (name: string, pathPrefix?: string): Router => ({ name, errors: { ...openSandboxErrorFormat, name }, pathPrefix, routes: [] });

function table(...paths: string[]): RouteTable<{ path: string }> {
  const t = new RouteTable<{ path: string }>();
  for (const path of paths) t.add('GET', { path }, router('r'));
  return t;
}

describe('RouteTable', () => {
  it('prefers a literal segment to a parameter, whatever the declaration order', () => {
    const t = table('/files/:name', '/files/info', '/:anything');
    expect(t.match('GET', '/files/info')?.route.path).toBe('/files/info');
    expect(t.match('GET', '/files/a.txt')?.params).toEqual({ name: 'a.txt' });
    expect(t.match('GET', '/other')?.params).toEqual({ anything: 'other' });
    expect(t.match('POST', '/files/info')).toBeNull();
    expect(t.match('GET', '/files/a/b')).toBeNull();
  });

  it('decodes parameters, and names a bad one in words', () => {
    const t = table('/session/:sessionId/run');
    expect(t.match('GET', '/session/a%2Fb/run')?.params).toEqual({ sessionId: 'a/b' });
    expect(() => t.match('GET', '/session/%E0%A4/run')).toThrow(new BadRequestError("session id '%E0%A4' is not valid percent-encoding"));
  });

  it("names the router of the route a bad parameter matched, whose format refuses it (not the prefix owner's)", () => {
    const t = new RouteTable<{ path: string }>();
    const tasks = router('tasks');
    t.add('POST', { path: '/sandboxes/:id/abort' }, tasks);
    let thrown: unknown;
    try {
      t.match('POST', '/sandboxes/%zz/abort');
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(BadParamEncodingError);
    expect((thrown as BadParamEncodingError).router).toBe(tasks);
    expect((thrown as BadParamEncodingError).refusal).toEqual(new BadRequestError("id '%zz' is not valid percent-encoding"));
  });

  it('matches the root', () => {
    expect(table('/').match('GET', '/')?.route.path).toBe('/');
  });
});

describe('splitTarget', () => {
  it.each([
    ['/health', '/health', ''],
    ['/health/', '/health', ''],
    ['/health?x=1&y', '/health', 'x=1&y'],
    ['/session/acquire/?a', '/session/acquire', 'a'],
    ['/', '/', ''],
    ['http://broker:8180/health?x', '/health', 'x'],
    ['*', '*', ''],
  ])('%s', (url, path, query) => {
    expect(splitTarget(url)).toEqual({ path, query });
  });
});

describe('formatForPath', () => {
  it('takes the longest claiming prefix, on segment boundaries, else the fallback', () => {
    const routers = [router('a', '/v1'), router('b', '/v1/sandboxes')];
    expect(formatForPath(routers, '/v1/sandboxes/x', poolErrorFormat).name).toBe('b');
    expect(formatForPath(routers, '/v1/sandboxesx', poolErrorFormat).name).toBe('a');
    expect(formatForPath(routers, '/v1', poolErrorFormat).name).toBe('a');
    expect(formatForPath(routers, '/v10/x', poolErrorFormat)).toBe(poolErrorFormat);
  });
});

describe('RouteTable rest parameters', () => {
  it('a last `*name` segment takes the rest of the path, slashes included, or nothing', () => {
    const t = table('/sandboxes/:id/port/:port/*path', '/sandboxes/:id/execd/ping');
    expect(t.match('GET', '/sandboxes/a/port/80/x/y.html')?.params).toEqual({ id: 'a', port: '80', path: 'x/y.html' });
    expect(t.match('GET', '/sandboxes/a/port/80')?.params).toEqual({ id: 'a', port: '80', path: '' });
    expect(t.match('GET', '/sandboxes/a/execd/ping')?.route.path).toBe('/sandboxes/:id/execd/ping');
    expect(t.match('GET', '/sandboxes/a/port')).toBeNull();
    expect(() => table('/a/*rest/b')).toThrow("route path '/a/*rest/b': '*rest' must be the last segment");
  });
});
