/**
 * A database query from inside a sandbox, timed there: python3's standard library (http.client, one
 * keep-alive connection, as an agent's client would hold one) against the sandbox's `VECTOR_DB_URL`,
 * so each sample is the whole path: the sandbox's loopback, its forwarder, the unix socket mounted
 * from the host, the broker's database router and LanceDB's search.
 */

/** `python3 - N K DIM` prints one JSON line: the latencies in ms of N queries of the K nearest. */
export const IN_SANDBOX_QUERY_PY = `import http.client, json, os, random, sys, time
n, k, dim = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
url = os.environ["VECTOR_DB_URL"][len("http://"):]
host, port = url.split(":")
conn = http.client.HTTPConnection(host, int(port), timeout=30)
headers = {"Authorization": "Bearer " + os.environ["VECTOR_DB_TOKEN"], "Content-Type": "application/json"}
rng = random.Random(7)
samples = []
for i in range(n + 20):
    body = json.dumps({"embedding": [rng.random() for _ in range(dim)], "k": k})
    t0 = time.perf_counter()
    conn.request("POST", "/namespaces/default/query", body, headers)
    resp = conn.getresponse()
    data = resp.read()
    if resp.status != 200 or len(json.loads(data)["results"]) != k:
        print(json.dumps({"error": resp.status, "body": data.decode()[:200]})); sys.exit(1)
    if i >= 20:
        samples.append((time.perf_counter() - t0) * 1000)
print(json.dumps({"samples": samples}))
`;

/** A population file of `count` documents with `dim`-dimensional embeddings (in its embeddings file). */
export function populationFiles(count: number, dim: number): { yaml: string; jsonl: string } {
  let seed = 1;
  const rand = (): number => ((seed = (seed * 16807) % 2147483647) / 2147483647);
  const docs: string[] = [];
  const lines: string[] = [];
  for (let i = 0; i < count; i++) {
    docs.push(`      - {id: d${i}, text: "document ${i}", metadata: {n: ${i}}}`);
    lines.push(JSON.stringify({ id: `d${i}`, embedding: Array.from({ length: dim }, rand) }));
  }
  return { yaml: `namespaces:\n  default:\n    embeddings_file: embeddings.jsonl\n    documents:\n${docs.join('\n')}\n`, jsonl: `${lines.join('\n')}\n` };
}
