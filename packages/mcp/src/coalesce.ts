import { setTimeout as sleep } from 'node:timers/promises';
import { ErrorCode, McpError, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { asBusinessOperationId, canonicalJson, type Ledger } from '@retrysafe/contract';
import { leaseLive, TERMINAL_STATES } from '@retrysafe/contract/ledger';
import type { AgentToolResult } from '@retrysafe/core/agent';

export type Hearer = (p: Progress) => void;

const MAX_WAIT_MS = 600_000;

/** The runner's answer to the call; `followUp` (RunInput's): a duplicate's or a follow-up's, which has not seen its end. */
type Run = (followUp: boolean) => Promise<AgentToolResult>;

/** One run per identical call in flight; a duplicate waits for the first up to the caller's `_meta["retrysafe/waitMs"]`
 * (else `defaultWaitMs`), and an `in-progress` answer is followed in the ledger for as long. A call's `hearers` are
 * those its run reports progress to: a duplicate's join the first's while it waits, since it shares that run. */
export function createCoalescer(ledger: Ledger, defaultWaitMs = 30_000) {
  const inflight = new Map<string, { answer: Promise<AgentToolResult>; hearers: Set<Hearer> }>();
  /** The tool calls under way, which a process that stops waits for (`settled`). */
  const running = new Set<Promise<unknown>>();
  let stopping = false;

  const untilEnded = async (r: AgentToolResult, deadline: number, run: Run): Promise<AgentToolResult> => {
    for (let delay = 20; r.status === 'in-progress' && Date.now() < deadline; delay = Math.min(delay * 2, 500)) {
      await sleep(Math.min(delay, Math.max(1, deadline - Date.now())));
      const record = await ledger.get(asBusinessOperationId(r.businessOperationId));
      if (record === null) continue;
      // As in the runner's own wait: an end it answers (or refuses as other params'), a lease run out it takes over.
      if (TERMINAL_STATES.includes(record.state) || !leaseLive(record, Date.now())) r = await run(true);
    }
    return r;
  };

  return {
    async call(tool: string, args: unknown, meta: unknown, run: Run, hearers = new Set<Hearer>()) {
      const v = (meta as Record<string, unknown> | undefined)?.['retrysafe/waitMs'];
      const waitMs = typeof v === 'number' && Number.isInteger(v) && v >= 0 ? Math.min(v, MAX_WAIT_MS) : defaultWaitMs;
      const deadline = Date.now() + waitMs;
      let key: string;
      try {
        key = `${tool}\n${canonicalJson(args)}`;
      } catch {
        return run(false); // arguments JSON cannot carry (nested too deep): the runner refuses them with its typed answer
      }
      const first = inflight.get(key);
      if (first) {
        for (const h of hearers) first.hearers.add(h);
        // Its own run (the runner's bounded wait for the first's claim) goes beside the wait for the first's answer, not
        // after it, and never runs again; its answer counts only at the deadline: one at rest may be what the first is
        // just replacing (the same call again after the user's step).
        const own = run(true).then((r) => sleep(Math.max(0, deadline - Date.now()), r, { ref: false }));
        return Promise.race([first.answer, own]).finally(() => {
          for (const h of hearers) first.hearers.delete(h);
        });
      }
      const answer = run(false).then((r) => untilEnded(r, deadline, run));
      inflight.set(key, { answer, hearers });
      try {
        return await answer;
      } finally {
        inflight.delete(key);
      }
    },
    /** A tool call's `answer`, counted among the calls under way until it ends. Once the process stops, not started: its
     * ledger and upstream are about to close, so the call is refused before anything is claimed or sent. */
    track<T>(answer: () => Promise<T>): Promise<T> {
      if (stopping)
        return Promise.reject(
          new McpError(ErrorCode.InternalError, 'the server is stopping: nothing was claimed or sent'),
        );
      const p = answer();
      running.add(p);
      return p.finally(() => running.delete(p));
    },
    /** The process stops: resolves once the tool calls under way have ended, or after `graceMs`. */
    settled(graceMs: number) {
      stopping = true;
      return Promise.race([Promise.allSettled(running), sleep(graceMs)]);
    },
  };
}

export type Coalescer = ReturnType<typeof createCoalescer>;
