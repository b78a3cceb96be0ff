import type { SandboxBehaviour } from '@retrysafe/sandbox';

/** A provider that replays a key's first answer: the usual well-behaved provider of these tests. */
export const REPLAYING: SandboxBehaviour = { replays: true, retentionMs: 86_400_000, parameterMatching: 'mismatch-error', concurrency: 'rejects-in-progress', lookup: 'get-by-key' };
