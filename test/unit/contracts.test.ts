/**
 * Each route is declared once: every route the routers serve (every API mounted) comes from exactly
 * one contract of src/api/contracts.ts, and every contract is served, once. The routers are built
 * over stand-in services that fail if called: building a router calls none of them.
 */
import { loadConfig } from '../../src/config/config';
import { brokerRouters, type BrokerApis } from '../../src/api/app';
import { docsRouter } from '../../src/api/docs/docsRoutes';
import { API_CONTRACTS } from '../../src/api/contracts';
import { API_DOCS } from '../../src/api/docs/apiDocs';
import { apiDocOf, contractKey, contractOf, type RouteContract } from '../../src/http/contract';
import type { Router } from '../../src/http/router';
import type { SessionPool } from '../../src/core/pool/pool';
import type { BrokerMetrics } from '../../src/metrics/metrics';

/** A service whose every property is another stand-in and whose every call throws. */
function standIn(name: string): never {
  const fn = (): never => {
    throw new Error(`${name} was called while a router was built`);
  };
  return new Proxy(fn, { get: (_t, key) => (key === 'then' ? undefined : standIn(`${name}.${String(key)}`)) }) as never;
}

function allRouters(): Router[] {
  const apis: BrokerApis = {
    workspaces: standIn('workspaces'),
    execd: standIn('execd'),
    groups: standIn('groups'),
    sandboxes: standIn('sandboxes'),
    tasks: standIn('tasks'),
    dashboard: standIn('dashboard'),
    images: standIn('images'),
  };
  const config = loadConfig({});
  return [...brokerRouters(standIn('pool') as SessionPool, standIn('metrics') as BrokerMetrics, config, apis), docsRouter(() => [])];
}

describe('route contracts', () => {
  const routers = allRouters();
  const served = routers.flatMap((r) => [...r.routes.map((route) => ({ route, key: `${route.method} ${route.path}` })), ...(r.upgrades ?? []).map((route) => ({ route, key: `WS ${route.path}` }))]);
  const contracts = API_CONTRACTS.flatMap((api) => Object.values(api.routes));
  /** The APIs whose routes are still described apart from their routers. */
  const describedApart = new Set(API_DOCS.filter((doc) => !API_CONTRACTS.some((api) => api.tag === doc.tag)).flatMap((doc) => Object.keys(doc.operations)));

  it('serves every route from a contract (the method, path and guard are the contract\'s)', () => {
    const without = served.filter(({ route, key }) => contractOf(route) === undefined && !describedApart.has(key)).map(({ key }) => key);
    expect(without).toEqual([]);
    for (const { route, key } of served) {
      const contract = contractOf(route);
      if (!contract) continue;
      expect({ key, contract: contractKey(contract), public: route.public === true }).toEqual({ key, contract: key, public: contract.public === true });
    }
  });

  it('serves every contract, exactly once', () => {
    const times = new Map<RouteContract, number>(contracts.map((c) => [c, 0]));
    for (const { route } of served) {
      const contract = contractOf(route);
      if (contract) times.set(contract, (times.get(contract) ?? 0) + 1);
    }
    const notOnce = [...times].filter(([, n]) => n !== 1).map(([c, n]) => `${contractKey(c)} served ${n} times`);
    expect(notOnce).toEqual([]);
    expect(contracts.length).toBeGreaterThan(20);
  });

  it('declares each route once across every API, and documents each contract', () => {
    const keys = contracts.map(contractKey);
    expect(keys.filter((k, i) => keys.indexOf(k) !== i)).toEqual([]);
    const documented = new Set(API_DOCS.flatMap((doc) => Object.keys(doc.operations)));
    expect(keys.filter((k) => !documented.has(k))).toEqual([]);
    for (const api of API_CONTRACTS) expect(API_DOCS.map((d) => JSON.stringify(d))).toContain(JSON.stringify(apiDocOf(api)));
  });
});
