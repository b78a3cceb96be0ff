// GitHub names a repository by owner/name in any case, and a renamed one answers under its old name too; a name a
// repository left can be taken by a new one. The id reads the repository GitHub resolves the name to: a retry under
// the old name is the same operation (never a second issue), and the new repository under an old name is another.
import { asBusinessOperationId, ConflictError, InvalidIntentError } from '@retrysafe/contract';
import type { Fault } from '@retrysafe/testkit';
import { lookupContext } from '@retrysafe/testkit/conformance';
import { describe, expect, it } from 'vitest';
import { commentParams, execute, issueParams, startRig } from './helpers.js';

/** A rig whose GET /repos/acme/widgets (the look-up before the claim) meets `faults`, one per call. */
async function resolveRig(faults: readonly Fault[]) {
  const rig = await startRig();
  let n = 0;
  rig.proxy.setFaults((_call, r) => (r.path === '/repos/acme/widgets' ? (faults[n++] ?? 'pass') : 'pass'));
  const lookups = () => rig.proxy.requests.filter((r) => r.path === '/repos/acme/widgets').length;
  return { ...rig, lookups };
}

describe('issues.create: the repository is the one GitHub resolves the name to', () => {
  it('created under the old name, then again under the new one ⇒ one operation, one issue', async () => {
    const { runner, adapter, sandbox } = await startRig([], {
      repositories: { 'acme/widgets': 41, 'acme/gizmos': 41 },
    });
    const first = await runner.run(adapter, 'issues.create', { params: issueParams(1) });
    const renamed = { ...issueParams(1), repo: 'gizmos' };
    const again = await runner.run(adapter, 'issues.create', { params: renamed }).catch((e: unknown) => e);
    expect(ConflictError.isInstance(again) && [again.businessOperationId, again.paths]).toEqual([
      first.businessOperationId,
      ['repo'],
    ]);
    expect(sandbox.count('issues.create')).toBe(1);
  });

  it('a new repository under a name another one left ⇒ another operation: its issue is created', async () => {
    const { runner, adapter, sandbox } = await startRig([], { repositories: { 'acme/widgets': 41 } });
    await runner.run(adapter, 'issues.create', { params: issueParams(2) });
    sandbox.setRepository('acme/widgets', 42);
    expect(await runner.run(adapter, 'issues.create', { params: issueParams(2) })).toMatchObject({
      status: 'done',
      adopted: false,
    });
    expect(sandbox.count('issues.create')).toBe(2);
  });
});

// The look-up is a read: one GitHub could not answer now is asked again by the runner's retry policy, and one still
// failing says "try again later" (nothing claimed or sent), never that the caller's repository is invalid.
describe('issues.create: the repository look-up before the claim', () => {
  it('a 503, then an answer ⇒ asked again after a backoff: one operation, one issue', async () => {
    const { runner, adapter, sandbox, lookups } = await resolveRig([{ kind: 'status', status: 503 }]);
    expect(await runner.run(adapter, 'issues.create', { params: issueParams(3) })).toMatchObject({ status: 'done' });
    expect([lookups(), sandbox.count('issues.create')]).toEqual([2, 1]);
  });

  it('a 503 every time ⇒ a retryable error once the policy’s attempts are used: nothing claimed, nothing sent', async () => {
    const always = Array<Fault>(10).fill({ kind: 'status', status: 503, retryAfterS: 2 });
    const { runner, adapter, sandbox, lookups } = await resolveRig(always);
    const e = await runner.run(adapter, 'issues.create', { params: issueParams(4) }).catch((x: unknown) => x);
    expect(e).toMatchObject({ name: 'IntentLookupError', path: 'repo' });
    expect(InvalidIntentError.isInstance(e)).toBe(false);
    expect([lookups(), sandbox.count('issues.create')]).toEqual([3, 0]);
  });

  it('a primary rate limit (remaining 0, reset an hour away) ⇒ IntentLookupError at once, naming the wait', async () => {
    const rig = await resolveRig([]);
    const at = rig.clock.now();
    const headers = {
      date: new Date(at).toUTCString(),
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': String(Math.floor(at / 1000) + 3600),
    };
    let n = 0;
    rig.proxy.setFaults((_c, r) =>
      r.path === '/repos/acme/widgets' && n++ === 0 ? { kind: 'status', status: 403, headers } : 'pass',
    );
    const e = await rig.runner.run(rig.adapter, 'issues.create', { params: issueParams(6) }).catch((x: unknown) => x);
    expect(e).toMatchObject({ name: 'IntentLookupError', retryAfterMs: expect.any(Number) });
    expect([rig.lookups(), rig.clock.now() - at, (e as { retryAfterMs: number }).retryAfterMs > 3_000_000]).toEqual([
      1,
      0,
      true,
    ]);
  });

  it('a 404 ⇒ InvalidIntentError at once (the caller’s to correct): asked once, nothing sent', async () => {
    const { runner, adapter, sandbox, lookups } = await resolveRig([{ kind: 'status', status: 404 }]);
    const run = runner.run(adapter, 'issues.create', { params: issueParams(5) });
    await expect(run).rejects.toThrow(InvalidIntentError);
    expect([lookups(), sandbox.count('issues.create')]).toEqual([1, 0]);
  });
});

// The id names the repository the name resolved to when the operation began; the name may belong to another one by
// the time a retry, a resume or a correction goes out. Whatever the path, it must not create in that other repository.
describe('issues.create, issues.createComment: a send after the name changed hands', () => {
  const OLD = 41;
  const NEW = 42;
  const handOver = (sandbox: { setRepository(name: string, id: number): void }) => {
    sandbox.setRepository('acme/gadgets', OLD); // the operation's repository renamed away
    sandbox.setRepository('acme/widgets', NEW); // and a new one created under its old name
  };
  const issuesIn = (sandbox: { issues(): readonly { kind: string; repositoryId: number }[] }, id: number) =>
    sandbox.issues().filter((i) => i.kind === 'issue' && i.repositoryId === id).length;

  // The name resolved, then handed over before the first send (the claim lies between): the send goes by the id read.
  for (const [operation, params] of [
    ['issues.create', issueParams(12)],
    ['issues.createComment', commentParams(12)],
  ] as const)
    it(`${operation}: the name handed over between the read and the send ⇒ created in the repository the id names`, async () => {
      const rig = await startRig([], { repositories: { 'acme/widgets': OLD } });
      const moving: typeof rig.adapter = {
        ...rig.adapter,
        async doResolveIntent(...args) {
          const read = await rig.adapter.doResolveIntent!(...args);
          handOver(rig.sandbox);
          return read;
        },
      };
      expect(await rig.runner.run(moving, operation, { params })).toMatchObject({ status: 'done' });
      const created = rig.sandbox
        .issues()
        .filter((i) => i.kind === 'issue')
        .map((i) => i.repositoryId);
      expect(operation === 'issues.create' ? created : rig.sandbox.count(operation)).toEqual(
        operation === 'issues.create' ? [OLD] : 1,
      );
    });

  it('a lookup goes by the id read (ctx.target): finds the issue in the renamed repository, not in the new one', async () => {
    const rig = await startRig([], { repositories: { 'acme/widgets': OLD } });
    const id = asBusinessOperationId('flaky-13');
    expect(await execute(rig.adapter, 'issues.create', issueParams(13), id)).toMatchObject({ kind: 'succeeded' });
    handOver(rig.sandbox);
    const now = rig.clock.now();
    const over = { firstDispatchedAt: now, now, target: { owner: 'repository', repo: String(OLD) } };
    const ctx = lookupContext(rig.adapter, 'issues.create', id, issueParams(13), over);
    expect(await rig.adapter.doLookup('issues.create', ctx)).toMatchObject({ kind: 'found' });
  });

  it('a retry after a 429 ⇒ nothing created in the new repository: handed off saying why', async () => {
    const rig = await startRig([], { repositories: { 'acme/widgets': OLD } });
    let posts = 0;
    rig.proxy.setFaults((_call, r) => {
      if (r.method !== 'POST' || posts++ > 0) return 'pass';
      handOver(rig.sandbox);
      return { kind: 'status', status: 429, retryAfterS: 1 };
    });
    const result = await rig.runner.run(rig.adapter, 'issues.create', { params: issueParams(6) });
    expect(issuesIn(rig.sandbox, NEW)).toBe(0);
    expect(result.status).toBe('handed-off');
    expect(rig.packets.at(-1)?.lastKnown.message).toMatch(/resolve to another object/);
  });

  it('a person’s resume ⇒ nothing created in the new repository', async () => {
    const rig = await startRig([], { repositories: { 'acme/widgets': OLD } }, { maxAttempts: 1 });
    rig.sandbox.setFaults('issues.create', [{ kind: 'rate-limited', status: 429, retryAfterS: 1 }]);
    const first = await rig.runner.run(rig.adapter, 'issues.create', { params: issueParams(7) });
    expect(first.status).toBe('handed-off');
    handOver(rig.sandbox);
    const resumed = await rig.runner.resolve(
      first.businessOperationId,
      { action: 'resume' },
      { adapters: [rig.adapter] },
    );
    expect(issuesIn(rig.sandbox, NEW)).toBe(0);
    expect(resumed.status).toBe('handed-off');
    expect(rig.packets.at(-1)?.lastKnown.message).toMatch(/resolve to another object/);
  });

  it('a recover() after the run stopped at a 429 ⇒ not looked up, nothing created in the new repository', async () => {
    const rig = await startRig([], { repositories: { 'acme/widgets': OLD } });
    const stop = new AbortController();
    rig.proxy.setFaults((_call, r) => {
      if (r.method !== 'POST') return 'pass';
      stop.abort(new Error('worker gone'));
      handOver(rig.sandbox);
      return { kind: 'status', status: 429, retryAfterS: 1 };
    });
    const run = rig.runner.run(rig.adapter, 'issues.create', { params: issueParams(9), signal: stop.signal });
    await expect(run).rejects.toThrow('worker gone');
    rig.proxy.setFaults(() => 'pass');
    const [report] = await rig.runner.recover({ adapters: [rig.adapter] });
    expect(issuesIn(rig.sandbox, NEW)).toBe(0);
    expect(report?.to).toBe('handed-off');
    // Its lookup did not list the new repository's issues as if they were the operation's.
    expect(rig.packets.at(-1)?.explanation).toMatch(/resolve to another object.*not looked up there/);
  });

  it('an intent the caller gave names no repository to check: its retry after a 429 is sent as before', async () => {
    const rig = await startRig([], { repositories: { 'acme/widgets': OLD } });
    rig.sandbox.setFaults('issues.create', [{ kind: 'rate-limited', status: 429, retryAfterS: 1 }]);
    const intent = { owner: 'acme', repo: 'widgets', title: 'Flaky test 10' };
    const result = await rig.runner.run(rig.adapter, 'issues.create', { params: issueParams(10), intent });
    expect(result).toMatchObject({ status: 'done', attempts: 2 });
    expect(issuesIn(rig.sandbox, OLD)).toBe(1);
  });

  /** A comment GitHub created whose answer was lost as its worker stopped, then `between`, then a recover(). */
  async function recoveredComment(
    intent: Record<string, unknown> | undefined,
    between: (sandbox: { setRepository(name: string, id: number): void }) => void,
  ) {
    const rig = await startRig([], { repositories: { 'acme/widgets': OLD } });
    const stop = new AbortController();
    rig.proxy.setFaults((_call, r) => (r.method === 'POST' ? { kind: 'delay', ms: 60_000 } : 'pass'));
    const input = { params: commentParams(11), signal: stop.signal, ...(intent && { intent }) };
    const run = rig.runner.run(rig.adapter, 'issues.createComment', input);
    await expect.poll(() => rig.sandbox.count('issues.createComment')).toBe(1);
    stop.abort(new Error('worker gone'));
    await expect(run).rejects.toThrow('worker gone');
    rig.proxy.setFaults(() => 'pass');
    between(rig.sandbox);
    const [report] = await rig.runner.recover({ adapters: [rig.adapter] });
    return { ...rig, report };
  }

  it('a recover() of a comment with the caller’s intent, its worker stopped after GitHub created it ⇒ adopted', async () => {
    const intent = { owner: 'acme', repo: 'widgets', issue_number: 1, run: 1234 };
    const { report, sandbox, packets } = await recoveredComment(intent, () => {});
    expect(report).toMatchObject({ action: 'adopted', to: 'succeeded' });
    expect([sandbox.count('issues.createComment'), packets]).toEqual([1, []]);
  });

  it('a recover() of a comment whose repository name changed hands since ⇒ handed off, not looked up there', async () => {
    const { report, sandbox, packets } = await recoveredComment(undefined, handOver);
    expect(report?.to).toBe('handed-off');
    expect(sandbox.count('issues.createComment')).toBe(1);
    expect(packets.at(-1)?.explanation).toMatch(/resolve to another object.*not looked up there/);
  });
});

describe('issues.create: white space an agent adds around the title is not another issue', () => {
  it('created as "Flaky test 3", then again with a line break after it ⇒ one operation, answered with the one issue', async () => {
    const { runner, adapter, sandbox } = await startRig();
    const first = await runner.run(adapter, 'issues.create', { params: issueParams(3) });
    const padded = { ...issueParams(3), title: `${issueParams(3).title}\n` };
    expect(await runner.run(adapter, 'issues.create', { params: padded })).toMatchObject({
      status: 'done',
      adopted: true,
      businessOperationId: first.businessOperationId,
    });
    expect(sandbox.count('issues.create')).toBe(1);
  });
});
