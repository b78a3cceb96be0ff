import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { canonicalJson, sha256Hex } from '@retrysafe/contract';
import { PROBE_COMMAND, parseOptions, target, UsageError, type Values } from './cli-options.js';
import { answerValue, connectUpstream, readPath, type Upstream, type UpstreamClient } from './fence/upstream.js';
import { aborted } from './fence/upstream-task.js';
import { stoppable } from './stoppable.js';

const toStdout = (line: string): void => void process.stdout.write(`${line}\n`);

/** `retrysafe-mcp probe …` (PROBE_COMMAND): the receipt, and the exit code (0 at most once, 1 duplicates, 3 no effect seen). */
export async function runProbe(argv: readonly string[], out = toStdout) {
  const { values: o, rest } = parseOptions(argv, PROBE_COMMAND);
  const { tool, countTool, countPath } = o;
  if (tool === undefined || countTool === undefined || countPath === undefined)
    throw new UsageError('name the tools: --tool, --count-tool and --count-path');
  // A receipt that cannot be written is found before any call is fired: the calls have effects.
  const writeReceipt = (text: string, flag = 'w') => {
    if (o.receipt === undefined) return;
    try {
      writeFileSync(o.receipt, text, { flag });
    } catch (e) {
      const why = (e as Error).message.replace(/^(E[A-Z]+): ([^,]+),.*$/s, '$2 ($1)');
      throw new UsageError(`--receipt ${o.receipt}: cannot write it: ${why}`);
    }
  };
  writeReceipt('', 'a');
  return stoppable(async (stop, onKill) => {
    let upstream: Upstream | undefined;
    try {
      upstream = await connectUpstream(target(o.url, rest), 'retrysafe-probe', {
        signal: stop,
        onKill,
        startTimeoutMs: o.startTimeoutMs,
      });
      const probing = probeTool({ ...o, tool, countTool, countPath, client: upstream, signal: stop });
      const receipt = await Promise.race([probing, aborted(stop)]);
      writeReceipt(JSON.stringify(receipt, null, 2) + '\n');
      out(receipt.summary);
      out(
        `calls: ${receipt.calls.map((c) => `${c.phase}=${c.answer}`).join(' ')}; effects counted by ${countTool}: ${receipt.before} → ${receipt.after}`,
      );
      return { receipt, exit: receipt.verdict === 'at-most-once' ? 0 : receipt.verdict === 'duplicates' ? 1 : 3 };
    } catch (e) {
      // A signal ends the server and the calls: no verdict, which is not "at most once".
      throw stop.aborted ? new Error(`stopped by ${stop.reason}: no verdict`) : e;
    } finally {
      await upstream?.close();
    }
  });
}

type Answer = 'ok' | 'tool-error' | 'timeout' | 'error';
export type ProbeReceipt = Awaited<ReturnType<typeof probeTool>>;

const CALL_TIMEOUT_MS = 30_000;

/** Identical calls at once, then one abandoned on a client timeout and re-issued; the effects are counted by a read tool. */
async function probeTool(
  o: Values<typeof PROBE_COMMAND.options> &
    Record<'tool' | 'countTool' | 'countPath', string> & { client: UpstreamClient; signal: AbortSignal },
) {
  const startedAt = new Date().toISOString();
  const count = async (): Promise<number> => {
    const args = { name: o.countTool, arguments: o.countArgs ?? {} };
    const answer = await o.client.callTool(args, undefined, { timeout: CALL_TIMEOUT_MS });
    const value = answerValue(answer as never);
    if (answer.isError)
      throw new Error(`${o.countTool} answered an error: ${typeof value === 'string' ? value : JSON.stringify(value)}`);
    const items = readPath(value, o.countPath);
    if (!Array.isArray(items)) throw new Error(`${o.countTool} gave no list at "${o.countPath}"`);
    const match = Object.entries(o.match ?? {});
    return items.filter((item) => match.every(([p, v]) => readPath(item, p) === v)).length;
  };
  const call = async (timeout: number): Promise<Answer> => {
    try {
      const a = await o.client.callTool({ name: o.tool, arguments: o.args ?? {} }, undefined, { timeout });
      return a.isError ? 'tool-error' : 'ok';
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
  await sleep(o.settleMs ?? 1500, undefined, { signal: o.signal });
  const after = await count();
  const effects = after - before;
  const verdict: 'at-most-once' | 'duplicates' | 'no-effect-seen' =
    effects > 1 ? 'duplicates' : effects === 1 ? 'at-most-once' : 'no-effect-seen';
  const summary = {
    duplicates: `DUPLICATES: ${effects} effects for one intent after ${calls.length} identical calls`,
    'at-most-once': `at most once: 1 effect for one intent after ${calls.length} identical calls`,
    'no-effect-seen': calls.some((c) => c.answer === 'ok')
      ? `no effect seen after ${calls.length} calls (does ${o.countTool} list what ${o.tool} creates?)`
      : `no effect seen: none of the ${calls.length} calls to ${o.tool} succeeded (are the tool's name and --args right?)`,
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
