import { setTimeout as sleep } from 'node:timers/promises';
import { canonicalJson, sha256Hex } from '@retrysafe/contract';
import type { PROBE_COMMAND, Values } from '../cli-options.js';
import { answerValue, readPath } from './fence-adapter.js';
import type { UpstreamClient } from './upstream.js';

/** The probe command's options (the writing tool, its sample arguments, the read tool that counts the effects…). */
type ProbeOptions = Values<typeof PROBE_COMMAND.options> & {
  readonly client: UpstreamClient;
  readonly tool: string;
  readonly countTool: string;
  readonly countPath: string;
};

type Answer = 'ok' | 'tool-error' | 'timeout' | 'error';
export type ProbeReceipt = Awaited<ReturnType<typeof probeTool>>;

const CALL_TIMEOUT_MS = 30_000;

/** Identical calls at once, then one abandoned on a client timeout and re-issued; the effects are counted by a read tool. */
export async function probeTool(o: ProbeOptions) {
  const startedAt = new Date().toISOString();
  const count = async (): Promise<number> => {
    const args = { name: o.countTool, arguments: o.countArgs ?? {} };
    const answer = await o.client.callTool(args, undefined, { timeout: CALL_TIMEOUT_MS });
    const items = readPath(answerValue(answer as never), o.countPath);
    if (!Array.isArray(items)) throw new Error(`probe: ${o.countTool} gave no list at "${o.countPath}"`);
    const match = Object.entries(o.match ?? {});
    return items.filter((item) => match.every(([p, v]) => readPath(item, p) === v)).length;
  };
  const call = async (timeout: number): Promise<Answer> => {
    try {
      const a = (await o.client.callTool({ name: o.tool, arguments: o.args ?? {} }, undefined, { timeout })) as {
        isError?: boolean;
      };
      return a?.isError ? 'tool-error' : 'ok';
    } catch (e) {
      return (e as { code?: unknown }).code === -32001 ? 'timeout' : 'error';
    }
  };

  const before = await count();
  const concurrent = await Promise.all(Array.from({ length: o.concurrent ?? 3 }, () => call(CALL_TIMEOUT_MS)));
  const calls = [
    ...concurrent.map((answer) => ({ phase: 'concurrent' as const, answer })),
    { phase: 'timed-out' as const, answer: await call(o.timeoutMs ?? 200) },
    { phase: 're-issued' as const, answer: await call(CALL_TIMEOUT_MS) },
  ];
  await sleep(o.settleMs ?? 1500);
  const after = await count();
  const effects = after - before;
  const verdict: 'at-most-once' | 'duplicates' | 'no-effect-seen' =
    effects > 1 ? 'duplicates' : effects === 1 ? 'at-most-once' : 'no-effect-seen';
  const summary = {
    duplicates: `DUPLICATES: ${effects} effects for one intent after ${calls.length} identical calls`,
    'at-most-once': `at most once: 1 effect for one intent after ${calls.length} identical calls`,
    'no-effect-seen': `no effect seen after ${calls.length} calls (does ${o.countTool} list what ${o.tool} creates?)`,
  }[verdict];
  return {
    probe: 'retrysafe.probe/v1' as const,
    tool: o.tool,
    // The arguments themselves are not kept: they may hold personal data.
    argsDigest: sha256Hex(canonicalJson(o.args ?? {})),
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
