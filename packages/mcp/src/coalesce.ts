import { setTimeout as sleep } from 'node:timers/promises';
import type { Progress } from '@modelcontextprotocol/sdk/types.js';
import { asBusinessOperationId, canonicalJson, type Ledger } from '@retrysafe/contract';
import { leaseLive, TERMINAL_STATES } from '@retrysafe/contract/ledger';
import { type AgentToolResult, answerAtRest } from '@retrysafe/core/agent';

export type Hearer = (p: Progress) => void;

const MAX_WAIT_MS = 600_000;

/** One run per identical call in flight; a duplicate waits for the first up to the caller's `_meta["retrysafe/waitMs"]`
 * (else `defaultWaitMs`), and an `in-progress` answer is followed in the ledger for as long. A call's `hearers` are
 * those its run reports progress to: a duplicate's join the first's while it waits, since it shares that run. */
export function createCoalescer(ledger: Ledger, defaultWaitMs = 30_000) {
  const inflight = new Map<string, { answer: Promise<AgentToolResult>; hearers: Set<Hearer> }>();
  /** The tool calls under way, which a process that stops waits for (`settled`). */
  const running = new Set<Promise<unknown>>();

  const untilEnded = async (
    r: AgentToolResult,
    deadline: number,
    run: () => Promise<AgentToolResult>,
  ): Promise<AgentToolResult> => {
    for (let delay = 20; r.status === 'in-progress' && Date.now() < deadline; delay = Math.min(delay * 2, 500)) {
      await sleep(Math.min(delay, Math.max(1, deadline - Date.now())));
      const record = await ledger.get(asBusinessOperationId(r.businessOperationId));
      if (record === null) continue;
      const ended = TERMINAL_STATES.includes(record.state);
      // Called again for a hand-off, the runner takes it as the caller's own new call (made after the user's step) and
      // may send it: a hand-off is answered from the ledger, nothing sent.
      // Given back (nothing sent), it is run again as any call of it is.
      if (ended && record.state !== 'succeeded' && record.state !== 'not-sent') return answerAtRest(ledger, record);
      // As in the runner's own wait: a result it adopts (or refuses as other params'), a lease run out it takes over.
      if (ended || !leaseLive(record, Date.now())) r = await run();
    }
    return r;
  };

  return {
    async call(
      tool: string,
      args: unknown,
      meta: unknown,
      run: () => Promise<AgentToolResult>,
      hearers = new Set<Hearer>(),
    ) {
      const v = (meta as Record<string, unknown> | undefined)?.['retrysafe/waitMs'];
      const waitMs = typeof v === 'number' && Number.isInteger(v) && v >= 0 ? Math.min(v, MAX_WAIT_MS) : defaultWaitMs;
      const deadline = Date.now() + waitMs;
      let key: string;
      try {
        key = `${tool}\n${canonicalJson(args)}`;
      } catch {
        return run(); // arguments JSON cannot carry (nested too deep): the runner refuses them with its typed answer
      }
      const first = inflight.get(key);
      if (first) {
        for (const h of hearers) first.hearers.add(h);
        // Its own run (the runner's bounded wait for the first's claim) goes beside the wait for the first's answer, not
        // after it; answered in-progress, it waits on for the first's up to the deadline, and never runs again.
        const own = run().then((r): Promise<AgentToolResult> | AgentToolResult =>
          r.status === 'in-progress' ? sleep(Math.max(0, deadline - Date.now()), r, { ref: false }) : r,
        );
        return Promise.race([first.answer, own]).finally(() => {
          for (const h of hearers) first.hearers.delete(h);
        });
      }
      const answer = run().then((r) => untilEnded(r, deadline, run));
      inflight.set(key, { answer, hearers });
      try {
        return await answer;
      } finally {
        inflight.delete(key);
      }
    },
    /** `answer` of a tool call, counted among the calls under way until it ends. */
    track<T>(answer: Promise<T>): Promise<T> {
      running.add(answer);
      return answer.finally(() => running.delete(answer));
    },
    /** Resolves once the tool calls under way have ended, or after `graceMs`. */
    settled: (graceMs: number) => Promise.race([Promise.allSettled(running), sleep(graceMs)]),
  };
}

export type Coalescer = ReturnType<typeof createCoalescer>;
