// GitHub names a repository by owner/name in any case, and a renamed one answers under its old name too; a name a
// repository left can be taken by a new one. The id reads the repository GitHub resolves the name to: a retry under
// the old name is the same operation (never a second issue), and the new repository under an old name is another.
import { ConflictError } from '@retrysafe/contract';
import { describe, expect, it } from 'vitest';
import { issueParams, startRig } from './helpers.js';

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
