/**
 * A gateway's routes, derived from every API's contracts (src/api/contracts.ts): each route is
 * served where its contract says (`gateway`: http/contract.ts), through the same seam a broker
 * serves with (http/seam.ts): one way to match, to check the client's token and to answer an error,
 * in each API's own format. Matching is the seam's: one Map lookup and a few regexes per call.
 *
 * - `id`: to the node the path's first parameter names (ids are `<node>.<incarnation>.<random>`:
 *   clusterIds.ts), read from the path alone, with no store lookup.
 * - `acquire`: placed by gatewayAcquire.ts (the pool API's acquires).
 * - `create`: placed on a node with capacity (placement.ts).
 * - `warm-images`: each image of a warm-up on the nodes its acquires go to (gatewayWarmups.ts).
 * - `list-workspaces`, `list-lifecycle`, `list-images`, `list-snapshots`, `list-lifecycle-snapshots`:
 *   every node, the answers merged (gatewayLists.ts).
 * - `home`, `any`: the home node, any serving node.
 * - `gateway`: the gateway's own answer (gateway.ts gives one for each such route, or does not start).
 * - `node`: not served: a client's call to it is answered as one to no route.
 *
 * Bodies are never read here: a route's handler relays them as they come (or reads them, to place).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { API_CONTRACTS } from '../../api/contracts';
import { apiErrors, contractKey, destinationOf, routingParam, served, upgrade, type ApiContract, type Destination, type RouteContract } from '../../http/contract';
import type { Route, RouteContext, Router, UpgradeContext, UpgradeRoute } from '../../http/router';

/** The lists a gateway merges, by their answer's shape. */
export type ListKind = 'workspaces' | 'lifecycle' | 'images' | 'snapshots' | 'lifecycle-snapshots';

/** Destinations of one node: the one an id names (`idParam`, the path parameter), the home node, any node. */
export type OneNode = 'id' | 'home' | 'any';

export type Handle = (ctx: RouteContext) => Promise<void>;
export type RelayUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer, ctx: UpgradeContext) => Promise<void>;

/** What a gateway does with a call, by its route's destination. */
export interface GatewayHandlers {
  forward(to: OneNode, idParam: string | null): Handle;
  tunnel(to: OneNode, idParam: string | null): RelayUpgrade;
  /** `path`: the acquire's route (`/session/acquire`, `/session/acquire_group`). */
  acquire(path: string): Handle;
  create(): Handle;
  /** POST /images: a warm-up spread over the nodes by image placement. */
  warmImages(): Handle;
  list(kind: ListKind): Handle;
  /** The gateway's own answer to a route of destination `gateway`, or undefined when it has none. */
  own(contract: RouteContract): Handle | undefined;
}

const LISTS: Partial<Record<Destination, ListKind>> = {
  'list-workspaces': 'workspaces',
  'list-lifecycle': 'lifecycle',
  'list-images': 'images',
  'list-snapshots': 'snapshots',
  'list-lifecycle-snapshots': 'lifecycle-snapshots',
};

/**
 * The gateway's routers, one per API. Throws at start for a route the gateway cannot serve as its
 * contract says: `id` without a path parameter, `gateway` without the gateway's own answer, a
 * WebSocket placed or merged.
 */
export function gatewayRouters(handlers: GatewayHandlers, { metricsPublic }: { metricsPublic: boolean }, contracts: readonly ApiContract[] = API_CONTRACTS): Router[] {
  return contracts.map((api) => {
    const routes: Route[] = [];
    const upgrades: UpgradeRoute[] = [];
    for (const contract of Object.values(api.routes)) {
      const to = destinationOf(api, contract);
      if (to === 'node') continue;
      const idParam = to === 'id' ? routingParam(contract) : null;
      if (to === 'id' && idParam === null) throw new Error(`${contractKey(contract)} goes to the node its id names, but its path has no parameter`);
      if (contract.method === 'WS') {
        if (to !== 'id' && to !== 'home' && to !== 'any') throw new Error(`WebSocket ${contract.path}: a gateway sends a WebSocket to one node (id, home or any), not '${to}'`);
        upgrades.push(upgrade(contract, { relay: handlers.tunnel(to, idParam) }));
        continue;
      }
      routes.push(served(contract, handlerOf(handlers, contract, to, idParam), { metricsPublic, relaysBody: true }));
    }
    return { name: `gateway ${api.tag}`, ...apiErrors(api), routes, upgrades };
  });
}

function handlerOf(handlers: GatewayHandlers, contract: RouteContract, to: Destination, idParam: string | null): Handle {
  switch (to) {
    case 'id':
    case 'home':
    case 'any':
      return handlers.forward(to, idParam);
    case 'acquire':
      return handlers.acquire(contract.path);
    case 'create':
      return handlers.create();
    case 'warm-images':
      return handlers.warmImages();
    case 'gateway': {
      const own = handlers.own(contract);
      if (!own) throw new Error(`${contractKey(contract)} is the gateway's own, but the gateway has no answer for it`);
      return own;
    }
    default: {
      const kind = LISTS[to];
      if (!kind) throw new Error(`${contractKey(contract)}: no gateway serves destination '${to}'`);
      return handlers.list(kind);
    }
  }
}
