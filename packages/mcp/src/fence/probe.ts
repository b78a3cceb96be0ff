import { setTimeout as sleep } from 'node:timers/promises';
import { canonicalJson, sha256Hex } from '@retrysafe/contract';
import { answerValue, readPath, type UpstreamClient } from './fence-adapter.js';

export interface ProbeOptions {
  readonly client: UpstreamClient;
  /** The writing tool to probe and its sample arguments (in a sandbox the user provides). */
  readonly tool: string;
  readonly args: Record<string, unknown>;
  /** A read tool that lists the effects, its arguments, and the path to the list in its answer. */
  readonly countTool: string;
  readonly countArgs?: Record<string, unknown>;
  readonly countPath: string;
  /** Item path → value: only items matching all of them count (default: every item). */
  readonly match?: Readonly<Record<string, unknown>>;
  /** Identical calls fired at once (default 3). */
  readonly concurrent?: number;
  /** The client timeout of the "timed out" call, ms (default 200): the call is abandoned, then re-issued. */
  readonly timeoutMs?: number;
  /** How long to wait for late effects before counting, ms (default 1500). */
  readonly settleMs?: number;
  /** Timeout of every other call, ms (default 30 000). */
  readonly callTimeoutMs?: number;
}

export interface ProbeReceipt {
  readonly probe: 'retrysafe.probe/v1';
  readonly tool: string;
  /** SHA-256 of the canonical sample arguments: the arguments themselves are not kept (they may hold PII). */
  readonly argsDigest: string;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly calls: readonly {
    readonly phase: 'concurrent' | 'timed-out' | 're-issued';
    readonly answer: 'ok' | 'tool-error' | 'timeout' | 'error';
  }[];
  readonly before: number;
  readonly after: number;
  readonly effects: number;
  readonly verdict: 'at-most-once' | 'duplicates' | 'no-effect-seen';
  readonly summary: string;
}

/** Identical calls at once, then one abandoned on a client timeout and re-issued; the effects are counted by a read tool. */
export async function probeTool(o: ProbeOptions): Promise<ProbeReceipt> {
  const startedAt = new Date().toISOString();
  const callTimeout = o.callTimeoutMs ?? 30_000;
  const count = async (): Promise<number> => {
    const answer = await o.client.callTool({ name: o.countTool, arguments: o.countArgs ?? {} }, undefined, {
      timeout: callTimeout,
    });
    const items = readPath(answerValue(answer as never), o.countPath);
    if (!Array.isArray(items)) throw new Error(`probe: ${o.countTool} gave no list at "${o.countPath}"`);
    const match = o.match ?? {};
    return items.filter((item) => Object.entries(match).every(([p, v]) => readPath(item, p) === v)).length;
  };
  const classify = async (p: Promise<unknown>): Promise<'ok' | 'tool-error' | 'timeout' | 'error'> => {
    try {
      const a = (await p) as { isError?: boolean };
      return a?.isError ? 'tool-error' : 'ok';
    } catch (e) {
      return (e as { code?: unknown }).code === -32001 ? 'timeout' : 'error';
    }
  };
  const call = (timeout: number) => o.client.callTool({ name: o.tool, arguments: o.args }, undefined, { timeout });

  const before = await count();
  const calls: {
    phase: 'concurrent' | 'timed-out' | 're-issued';
    answer: 'ok' | 'tool-error' | 'timeout' | 'error';
  }[] = [];
  const concurrent = await Promise.all(Array.from({ length: o.concurrent ?? 3 }, () => classify(call(callTimeout))));
  for (const answer of concurrent) calls.push({ phase: 'concurrent', answer });
  calls.push({ phase: 'timed-out', answer: await classify(call(o.timeoutMs ?? 200)) });
  calls.push({ phase: 're-issued', answer: await classify(call(callTimeout)) });
  await sleep(o.settleMs ?? 1500);
  const after = await count();
  const effects = after - before;
  const verdict = effects > 1 ? 'duplicates' : effects === 1 ? 'at-most-once' : 'no-effect-seen';
  const summary =
    verdict === 'duplicates'
      ? `DUPLICATES: ${effects} effects for one intent after ${calls.length} identical calls`
      : verdict === 'at-most-once'
        ? `at most once: 1 effect for one intent after ${calls.length} identical calls`
        : `no effect seen after ${calls.length} calls (does ${o.countTool} list what ${o.tool} creates?)`;
  return {
    probe: 'retrysafe.probe/v1',
    tool: o.tool,
    argsDigest: sha256Hex(canonicalJson(o.args)),
    startedAt,
    finishedAt: new Date().toISOString(),
    calls,
    before,
    after,
    effects,
    verdict,
    summary,
  };
}
