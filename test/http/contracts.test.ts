/**
 * Each route is declared once: every route the routers serve (every API mounted, and a node's own)
 * comes from exactly one contract of src/api/contracts.ts, guarded as the contract says, with its
 * errors in its API's format; every contract is served, once (the gateway's own by the gateway:
 * gatewayRoutes.test.ts), says where a gateway sends it, and is documented unless it is a node's own.
 * The routers are built over stand-in services that fail if called: building a router calls none of them.
 * @backend any
 */
import { loadConfig } from '../../src/config/config';
import { brokerRouters, type BrokerApis } from '../../src/api/app';
import { docsRouter } from '../../src/api/docs/docsRoutes';
import { API_CONTRACTS } from '../../src/api/contracts';
import { API_DOCS } from '../../src/api/docs/apiDocs';
import { CLUSTER_CONTRACT } from '../../src/api/cluster/clusterContract';
import { contractKey, contractOf, destinationOf, isPublic, type RouteContract } from '../../src/http/contract';
import { ERROR_FORMATS } from '../../src/http/errorFormats';
import { AcquireCuts } from '../../src/cluster/node/acquireCuts';
import { imageCheckRouter } from '../../src/api/images/imageRoutes';
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

const config = loadConfig({});

/** A broker's routers with every API mounted, and the routes a node adds for its gateways. */
function allRouters(): Router[] {
  const apis: BrokerApis = {
    workspaces: standIn('workspaces'),
    execd: standIn('execd'),
    directory: standIn('directory'),
    groups: standIn('groups'),
    sandboxes: standIn('sandboxes'),
    tasks: standIn('tasks'),
    dashboard: standIn('dashboard'),
    images: standIn('images'),
    snapshots: standIn('snapshots'),
  };
  return [...brokerRouters(standIn('pool') as SessionPool, standIn('metrics') as BrokerMetrics, config, apis), docsRouter(() => []), new AcquireCuts().router(), imageCheckRouter(standIn('warmups'))];
}

/** Served by a gateway alone (its list of the cluster's nodes). */
const GATEWAY_ONLY: readonly RouteContract[] = [CLUSTER_CONTRACT.routes.targets];

describe('route contracts', () => {
  const routers = allRouters();
  const served = routers.flatMap((r) => [...r.routes.map((route) => ({ router: r, route, key: `${route.method} ${route.path}` })), ...(r.upgrades ?? []).map((route) => ({ router: r, route, key: `WS ${route.path}` }))]);
  const contracts = API_CONTRACTS.flatMap((api) => Object.values(api.routes));

  it("serves every route from a contract (the method, path and guard are the contract's)", () => {
    expect(served.filter(({ route }) => contractOf(route) === undefined).map(({ key }) => key)).toEqual([]);
    for (const { route, key } of served) {
      const contract = contractOf(route)!;
      expect({ key, contract: contractKey(contract), public: route.public === true }).toEqual({ key, contract: key, public: isPublic(contract, config) });
    }
  });

  it('serves every contract exactly once (the gateway serves its own)', () => {
    const times = new Map<RouteContract, number>(contracts.map((c) => [c, 0]));
    for (const { route } of served) times.set(contractOf(route)!, (times.get(contractOf(route)!) ?? 0) + 1);
    const wrong = [...times].filter(([c, n]) => n !== (GATEWAY_ONLY.includes(c) ? 0 : 1)).map(([c, n]) => `${contractKey(c)} served ${n} times`);
    expect(wrong).toEqual([]);
    expect(contracts.length).toBeGreaterThan(140);
  });

  it("answers each route's errors in its API's format, under the URL space its API owns", () => {
    for (const { router, route, key } of served) {
      const api = API_CONTRACTS.find((a) => Object.values(a.routes).includes(contractOf(route)!))!;
      expect({ key, router: router.name, errors: router.errors.name, pathPrefix: router.pathPrefix }).toEqual({ key, router: router.name, errors: ERROR_FORMATS[api.errors].name, pathPrefix: api.pathPrefix });
    }
  });

  it('declares each route once across every API, says where a gateway sends it, and documents what clients call', () => {
    const keys = contracts.map(contractKey);
    expect(keys.filter((k, i) => keys.indexOf(k) !== i)).toEqual([]);
    const documented = new Set(API_DOCS.flatMap((doc) => Object.keys(doc.operations)));
    for (const api of API_CONTRACTS) {
      for (const route of Object.values(api.routes)) {
        const to = destinationOf(api, route);
        expect({ route: contractKey(route), documented: documented.has(contractKey(route)) }).toEqual({ route: contractKey(route), documented: to !== 'node' });
      }
    }
  });
});
