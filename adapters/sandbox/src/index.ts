// The sandbox package is itself the sandbox: the adapter, the in-memory provider, its loopback server and the drills.
import { sandboxCreateCard } from './sandbox-cards.js';
import { FORGETFUL_BEHAVIOUR, REPLAYING_BEHAVIOUR } from './sandbox-drills.js';

export { createSandboxAdapter, type SandboxAdapter, type SandboxAdapterOptions, type SandboxParams, type SandboxResult } from './sandbox-adapter.js';
export { sandboxCreateCard, type SandboxLimits } from './sandbox-cards.js';
export { createSandboxProvider } from './sandbox-provider.js';
export type { SandboxBehaviour, SandboxFault, SandboxProvider, SandboxRecord, SandboxResponse, SandboxExecuteRequest, SandboxLookupResponse } from './sandbox-provider.js';
export { startSandboxServer, type SandboxServer, type SandboxServerOptions } from './sandbox-server.js';
export { drills, sandboxDrill, REPLAYING_BEHAVIOUR, FORGETFUL_BEHAVIOUR, type SandboxDrill, type SandboxDrillOperation } from './sandbox-drills.js';

/** The cards of the two behaviours the drills use (`sandboxCreateCard(behaviour)` gives the card of any other). */
export const sandboxCards = {
  'sandbox-replaying': sandboxCreateCard(REPLAYING_BEHAVIOUR, {}, ['ref', 'amount']),
  'sandbox-forgetful': sandboxCreateCard(FORGETFUL_BEHAVIOUR, {}, ['ref', 'amount']),
} as const;
