import { createFaultQueue } from '@retrysafe/sandbox-kit';
import {
  filtered,
  isPlainObject,
  type KeyedSandbox,
  keyedState,
  type PatternRoute,
  routed,
  type SandboxReply,
  type SandboxRequestView,
} from './server.js';

/**
 * AWS-style client tokens (EC2 RunInstances `ClientToken`), as JSON on `POST /instances`:
 * - `ClientToken`: at most 64 ASCII characters (longer ⇒ 400 `InvalidParameterValue`);
 * - same token, same params ⇒ the identical first response, even if the instance changed since
 *   (REL04-BP04); same token, changed params ⇒ 400 `IdempotentParameterMismatch`;
 * - no token ⇒ every request launches a new instance;
 * - tokens are kept `retentionMs` (EC2: at least 24 h after the instance terminates);
 * - `GET /instances?clientToken=…` lists instances launched with that token (DescribeInstances filter `client-token`);
 * - `throttleNext(n)`: 503 `RequestLimitExceeded`, answered before any processing.
 * Errors are `{ "__type": code, "message": … }` with an `x-amzn-RequestId` header.
 */
export interface ClientTokenSandboxOptions {
  readonly port?: number;
  /** Time source for key expiry (e.g. the drill's virtual clock). Default: the wall clock. */
  readonly clock?: { now(): number };
  /** How long a token is remembered (from launch). Default 24 h. */
  readonly retentionMs?: number;
}

export interface SandboxInstance {
  readonly InstanceId: string;
  readonly ImageId: string;
  readonly InstanceType: string;
  readonly ClientToken: string | null;
  readonly State: 'pending' | 'running' | 'terminated';
}

/** Counts instances launched (`instances`, or the operation name `instances.run`). */
export interface ClientTokenSandbox extends KeyedSandbox<SandboxInstance> {
  terminate(instanceId: string): void;
  throttleNext(n: number): void;
}

const INSTANCE_TYPES = ['t3.micro', 't3.small', 'm7g.large'] as const;

const awsError = (status: number, code: string): SandboxReply => ({ status, body: { __type: code, message: code } });

export async function startClientTokenSandbox(options: ClientTokenSandboxOptions = {}): Promise<ClientTokenSandbox> {
  const instances: SandboxInstance[] = [];
  // Only a launch is remembered under its token (a refused request is not); the launch answers at once,
  // so no request sees another in flight.
  const { run, start } = keyedState(options, {
    mismatch: awsError(400, 'IdempotentParameterMismatch'),
    stores: (reply) => reply.status === 200,
  });
  const throttle = createFaultQueue<'RequestLimitExceeded'>('client-token sandbox');

  function launch(token: unknown, params: Record<string, unknown>): SandboxReply {
    if (typeof params.ImageId !== 'string' || !/^ami-[0-9a-f]{8,17}$/.test(params.ImageId))
      return awsError(400, 'InvalidAMIID.Malformed');
    if (typeof params.InstanceType !== 'string' || !(INSTANCE_TYPES as readonly string[]).includes(params.InstanceType))
      return awsError(400, 'InvalidParameterValue');
    const instance: SandboxInstance = {
      InstanceId: `i-${(instances.length + 1).toString(16).padStart(17, '0')}`,
      ImageId: params.ImageId,
      InstanceType: params.InstanceType,
      ClientToken: typeof token === 'string' ? token : null,
      State: 'pending',
    };
    instances.push(instance);
    return { status: 200, body: { Instances: [{ ...instance }] } };
  }

  function runInstances(req: SandboxRequestView): Promise<SandboxReply> | SandboxReply {
    if (throttle.take()) return awsError(503, 'RequestLimitExceeded');
    const body = req.body;
    if (!isPlainObject(body)) return awsError(400, 'InvalidParameterValue');
    const { ClientToken: token, ...params } = body;
    if (
      token !== undefined &&
      (typeof token !== 'string' || token.length === 0 || token.length > 64 || !/^[\x20-\x7e]+$/.test(token))
    ) {
      return awsError(400, 'InvalidParameterValue');
    }
    // Same token, same params: the identical first response, even if the instance changed since.
    if (typeof token !== 'string') return launch(token, params);
    return run(token, params, () => launch(token, params));
  }

  const routes: PatternRoute[] = [
    {
      method: 'GET',
      path: '/instances',
      handle: (req) => ({ status: 200, body: { Instances: filtered(req, 'clientToken', instances, 'ClientToken') } }),
    },
    { method: 'POST', path: '/instances', handle: runInstances },
  ];
  const sandbox = await start({
    requestId: ['x-amzn-requestid', 'rq-'],
    kinds: ['instances', 'instances.run'],
    records: () => instances,
    handle: routed(routes, awsError(404, 'UnknownOperation')),
  });
  return {
    ...sandbox,
    terminate: (id) => {
      const i = instances.findIndex((x) => x.InstanceId === id);
      if (i < 0) throw new Error(`no instance ${id}`);
      instances[i] = { ...instances[i]!, State: 'terminated' };
    },
    throttleNext: (n) => throttle.add('RequestLimitExceeded', n),
  };
}
