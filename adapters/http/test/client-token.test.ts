import { asBusinessOperationId } from '@retrysafe/contract';
import { executeContext, operationIdFor } from '@retrysafe/testkit/conformance';
import { describe, expect, it } from 'vitest';
import { clientTokenInstancesRun } from '../src/index.js';
import { startClientTokenSandbox } from '../src/sandbox/index.js';
import { expectFoundOnlyAfterExecute, paramsWith, sandboxPerTest } from './helpers.js';

const OP = 'instances.run';
const launch = paramsWith({ imageId: 'ami-0abcdef12', instanceType: 't3.micro', launchRef: 'L-1' });

describe('AWS-style ClientToken: SDK → sandbox', () => {
  const env = sandboxPerTest(() => startClientTokenSandbox({ port: 0 }), 'acme-compute', OP, clientTokenInstancesRun);

  it('200 ⇒ succeeded with the instance id; the token travels in the body field ClientToken', async () => {
    const ctx = executeContext(env.adapter, OP, operationIdFor(env.adapter, OP, launch()));
    expect(await env.adapter.doExecute(OP, launch(), ctx)).toMatchObject({
      kind: 'succeeded',
      status: 200,
      providerRef: 'i-00000000000000001',
      requestId: 'rq-1',
    });
    expect(env.sb.records()[0]!.ClientToken).toBe(ctx.providerKey);
  });

  it('same token, same params ⇒ the identical first response even after the instance changed; one instance', async () => {
    const ctx = executeContext(env.adapter, OP, operationIdFor(env.adapter, OP, launch()));
    const a = await env.adapter.doExecute(OP, launch(), ctx);
    env.sb.terminate('i-00000000000000001');
    const b = await env.adapter.doExecute(OP, launch(), { ...ctx, attempt: 2 });
    expect((b as { result: unknown }).result).toEqual((a as { result: unknown }).result);
    expect(env.sb.count(OP)).toBe(1);
  });

  it('same token, changed params ⇒ IdempotentParameterMismatch ⇒ rejected (conflict)', async () => {
    const ctx = executeContext(env.adapter, OP, operationIdFor(env.adapter, OP, launch()));
    await env.adapter.doExecute(OP, launch(), ctx);
    expect(await env.adapter.doExecute(OP, launch({ instanceType: 't3.small' }), { ...ctx, attempt: 2 })).toMatchObject(
      { kind: 'rejected', reason: 'conflict', status: 400, code: 'IdempotentParameterMismatch' },
    );
    expect(env.sb.count(OP)).toBe(1);
  });

  it('validation ⇒ rejected (validation); RequestLimitExceeded 503 ⇒ not-applied (throttled before processing)', async () => {
    const bad = launch({ imageId: 'nope' });
    expect(await env.execute(bad)).toMatchObject({
      kind: 'rejected',
      reason: 'validation',
      code: 'InvalidAMIID.Malformed',
    });
    env.sb.throttleNext(1);
    expect(await env.execute(launch())).toMatchObject({
      kind: 'not-applied',
      status: 503,
      code: 'RequestLimitExceeded',
    });
    expect(env.sb.count(OP)).toBe(0);
  });

  it('a long caller-supplied business-operation id still gives a token within 64 ASCII characters', () => {
    const key = env.adapter.deriveProviderKey(OP, asBusinessOperationId(`launch/${'x'.repeat(150)}`))!;
    expect(key.length).toBeLessThanOrEqual(64);
    expect(key.startsWith('rs-')).toBe(true);
  });

  it('lookup by token: found with the instance id after a launch, cannot-tell before', async () => {
    await expectFoundOnlyAfterExecute(env, launch(), 'i-00000000000000001');
  });
});
