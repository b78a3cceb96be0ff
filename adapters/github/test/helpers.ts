import { asBusinessOperationId, type HandoffPacket, type OperationName } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock, type PolicyOverrides } from '@retrysafe/core';
import { type Fault, startFaultProxy } from '@retrysafe/testkit';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { executeContext } from '@retrysafe/testkit/conformance';
import { createGitHubAdapter, type GitHubAdapter } from '../src/index.js';
import { type GitHubSandboxOptions, startGitHubSandbox } from '../src/sandbox/index.js';

export const TOKEN = 'test-token-not-a-secret';
export const OWNER = 'acme';
export const REPO = 'widgets';

export const issueParams = (i = 0) => ({
  owner: OWNER,
  repo: REPO,
  title: `Flaky test ${i}`,
  body: `Seen in nightly run ${i}.`,
});
export const commentParams = (i = 0, issue_number = 1) => ({
  owner: OWNER,
  repo: REPO,
  issue_number,
  body: `Still failing in run ${i}.`,
});
export const SEED = [{ owner: OWNER, repo: REPO, title: 'Nightly build failures' }];

/** One doExecute with the context the runner would build for the business-operation id `id`. */
export const execute = (adapter: GitHubAdapter, operation: OperationName<GitHubAdapter>, params: unknown, id: string) =>
  adapter.doExecute(operation, params, executeContext(adapter, operation, asBusinessOperationId(id)));

/** Network faults for the creates (POST), one per call; other requests pass. */
function startPostFaultProxy(target: string, posts: readonly Fault[]) {
  let n = 0;
  return startFaultProxy({
    target,
    faults: (_call, request) => (request.method === 'POST' ? (posts[n++] ?? 'pass') : 'pass'),
  });
}

/** The runner + the real Octokit → the fault proxy → the sandbox, on one virtual clock. */
export async function startRig(
  posts: readonly Fault[] = [],
  sandboxOptions: GitHubSandboxOptions = {},
  policy: PolicyOverrides = {},
  /** How far GitHub's clock runs behind the runner's. */
  sandboxBehindMs = 0,
) {
  const clock = createVirtualClock();
  const sandbox = closeAfterTest(
    await startGitHubSandbox({ token: TOKEN, now: () => clock.now() - sandboxBehindMs, seed: SEED, ...sandboxOptions }),
  );
  const proxy = closeAfterTest(await startPostFaultProxy(sandbox.url, posts));
  const adapter = createGitHubAdapter({ auth: TOKEN, baseUrl: proxy.url, timeoutMs: 2_000 });
  const packets: HandoffPacket[] = [];
  const runner = createRunner({
    ledger: createMemoryLedger(),
    clock,
    random: () => 0.5,
    policy: { lookupWindowMs: 60_000, ...policy },
    handoff: { send: (p) => void packets.push(p) },
  });
  return { clock, sandbox, proxy, adapter, packets, runner };
}

/** One issues.create run on the rig: its result and how long it took on the rig's clock. */
export async function timedCreate(rig: Awaited<ReturnType<typeof startRig>>, n: number) {
  const start = rig.clock.now();
  const r = await rig.runner.run(rig.adapter, 'issues.create', { params: issueParams(n) });
  return { r, tookMs: rig.clock.now() - start };
}
