// What an agent is shown of a tool call's error carries the redaction its runner was built with (the runner's
// `redact`, the operation's declared sensitive fields, their values in the call's params), however the runner is
// passed: spread with extra fields, or wrapped (then it is refused when the tools are built, before any call).
import { type Ledger, LedgerError } from '@retrysafe/contract';
import { createRunner, type Runner, RunnerConfigurationError } from '@retrysafe/core';
import { agentRunner, agentTools, callAgentTool, operationStatus } from '@retrysafe/core/agent';
import { describe, expect, it } from 'vitest';
import { scripted, setup } from './helpers.js';

const PIN = 'badge-4471-secret';
const VOUCHER = 'voucher-8812-secret';

/** A ledger whose claim fails with a driver error that echoes what it was given (a row's values). */
function echoing(ledger: Ledger): Ledger {
  return {
    ...ledger,
    claim: (input) => Promise.reject(new LedgerError(`row refused: ${JSON.stringify(input.params)}`)),
  };
}

function tool() {
  const { adapter, ledger } = setup({}, {}, { sensitiveFields: ['voucher'] });
  const runner = createRunner({ ledger: echoing(ledger), redact: { fields: ['badge'] } });
  return { runner, tool: agentTools([adapter], ['sandbox_records_create'])[0]!, ledger };
}

const text = (e: unknown) => `${(e as Error).message}\n${(e as Error).stack}`;

describe("an agent's tool error keeps the runner's redaction", () => {
  it('blanks a value of a field the runner declares secret, and of one the operation declares', async () => {
    const { runner, tool: t } = tool();
    const err = await callAgentTool(agentRunner(runner), t, { ref: 'r-1', badge: PIN, voucher: VOUCHER }).catch(
      (e: unknown) => e,
    );
    expect(LedgerError.isInstance(err)).toBe(true);
    expect(text(err)).toContain('row refused');
    expect(text(err)).not.toContain(PIN);
    expect(text(err)).not.toContain(VOUCHER);
  });

  it('from a runner spread with fields of its own', async () => {
    const { runner, tool: t } = tool();
    const spread: Runner = { ...runner, extra: 1 } as Runner;
    const err = await callAgentTool(agentRunner(spread), t, { ref: 'r-2', badge: PIN }).catch((e: unknown) => e);
    expect(text(err)).toContain('row refused');
    expect(text(err)).not.toContain(PIN);
  });

  it('refuses a wrapped runner that lost it once, when the tools are built', async () => {
    const { runner } = tool();
    const wrapped: Runner = {
      run: (...a) => runner.run(...a),
      recover: (o) => runner.recover(o),
      resolve: (...a) => runner.resolve(...a),
      checkResolve: (...a) => runner.checkResolve(...a),
    };
    expect(() => agentRunner(wrapped)).toThrow(RunnerConfigurationError);
  });
});

describe("an agent's done answer", () => {
  // A created object may hold a token for its client (a PaymentIntent's client_secret) or a field the runner's redact
  // names: the program gets it from run(); an agent would paste it into its next prompt. What it sent stays readable.
  it("blanks provider tokens and the runner's fields in the result, keeps the rest; the ledger keeps it whole", async () => {
    const { adapter, ledger } = setup({}, {}, { sensitiveFields: ['voucher'] });
    const result = { id: 'pi_1', client_secret: 'pi_1_secret_Zx81', badge: PIN, voucher: VOUCHER };
    const answering = scripted(adapter, () => ({ kind: 'succeeded', result, providerRef: 'pi_1' }));
    const runner = createRunner({ ledger, redact: { fields: ['badge'] } });
    const t = agentTools([answering], ['sandbox_records_create'])[0]!;
    for (const _call of ['first', 'repeat']) {
      const answer = await callAgentTool(agentRunner(runner), t, {
        ref: 'd-1',
        badge: PIN,
        to: 'jane.doe@example.com',
      });
      expect(answer).toMatchObject({ status: 'done', providerRef: 'pi_1' });
      expect('result' in answer && answer.result).toEqual({
        id: 'pi_1',
        client_secret: '[redacted]',
        badge: '[redacted]',
        voucher: VOUCHER,
      });
    }
    const [row] = await ledger.list();
    expect(row?.result).toEqual(result);
    // retrysafe_status shows it as the done answer does; without the runner, tokens are still blanked.
    const status = await operationStatus(ledger, row!.businessOperationId, { agent: agentRunner(runner) });
    expect(status).toMatchObject({ result: { client_secret: '[redacted]', badge: '[redacted]' } });
    const bare = await operationStatus(ledger, row!.businessOperationId);
    expect(bare).toMatchObject({ result: { id: 'pi_1', client_secret: '[redacted]' } });
  });
});
