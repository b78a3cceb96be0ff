import type { ConformanceOptions } from '@retrysafe/testkit/conformance';
import type { AdapterV1, RetrySafetyCard } from '@retrysafe/contract';

/** One adapter package as the CLI sees it: its drill setups (one per provider/sandbox) and its cards. */
export interface AdapterEntry {
  readonly name: string;
  readonly drills: readonly ConformanceOptions[];
}

/**
 * Every adapter the CLI drives. Each adapter package exports, from its `./sandbox` subpath, the drill
 * setups its own conformance test runs — so `retrysafe drill` runs exactly what the adapter's tests run.
 */
export async function loadAdapters(): Promise<AdapterEntry[]> {
  const [sandbox, stripe, msgraph, hubspot, http] = await Promise.all([
    import('@retrysafe/sandbox'),
    import('@retrysafe/stripe/sandbox'),
    import('@retrysafe/msgraph/sandbox'),
    import('@retrysafe/hubspot/sandbox'),
    import('@retrysafe/http/sandbox'),
  ]);
  return [
    { name: 'sandbox', drills: sandbox.drills as readonly ConformanceOptions[] },
    { name: 'stripe', drills: stripe.drills as readonly ConformanceOptions[] },
    { name: 'msgraph', drills: msgraph.drills as readonly ConformanceOptions[] },
    { name: 'hubspot', drills: hubspot.drills as readonly ConformanceOptions[] },
    { name: 'http', drills: http.drills as readonly ConformanceOptions[] },
  ];
}

/** An adapter instance for reading cards and operation specs; its base URL is never contacted. */
export async function adapterFor(drill: ConformanceOptions): Promise<AdapterV1> {
  return drill.createAdapter({ baseUrl: 'http://127.0.0.1:9', timeoutMs: 1000 });
}

export async function cardsOf(entry: AdapterEntry): Promise<RetrySafetyCard[]> {
  const cards: RetrySafetyCard[] = [];
  for (const drill of entry.drills) {
    const adapter = await adapterFor(drill);
    for (const spec of Object.values(adapter.operations)) cards.push(spec.card);
  }
  return cards;
}

export function selectAdapters(all: AdapterEntry[], names: readonly string[] | undefined): AdapterEntry[] {
  if (!names || names.length === 0) return all;
  const unknown = names.filter((n) => !all.some((a) => a.name === n));
  if (unknown.length) throw new UsageError(`unknown adapter ${unknown.join(', ')} (known: ${all.map((a) => a.name).join(', ')})`);
  return all.filter((a) => names.includes(a.name));
}

/** Bad command-line input: exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}
