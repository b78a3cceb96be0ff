// Core's root is what a user calls (issue 39 item 5): at most 25 values. Agent-tool helpers live on
// ./agent, the runner's parts on ./internal.
import { describe, expect, it } from 'vitest';

// Moving out of core (to @retrysafe/ledger-sqlite and @retrysafe/testkit/ledger): not counted.
const MOVING = new Set(['createSqliteLedger', 'sqliteDrivers', 'ledgerSuite']);

describe('@retrysafe/core entries', () => {
  it('the root exports at most 25 values, none of them agent or decision internals', async () => {
    const root = Object.keys(await import('@retrysafe/core')).filter((n) => !MOVING.has(n));
    expect(root.length).toBeLessThanOrEqual(25);
    for (const n of [
      'agentTools',
      'callAgentTool',
      'decide',
      'resolvePolicy',
      'createRedactor',
      'paramsErrors',
      'identityOf',
    ])
      expect(root).not.toContain(n);
  });

  it('the subpaths hold the agent helpers and the internals', async () => {
    expect(Object.keys(await import('@retrysafe/core/agent'))).toEqual(
      expect.arrayContaining(['agentTools', 'callAgentTool', 'toAgentResult']),
    );
    expect(Object.keys(await import('@retrysafe/core/internal'))).toEqual(
      expect.arrayContaining(['decide', 'resolvePolicy', 'createRedactor']),
    );
  });
});
