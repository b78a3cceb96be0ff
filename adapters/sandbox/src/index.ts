// The sandbox package is itself the sandbox: the adapter, the in-memory provider, its loopback server and the drills.
import { sandboxCreateCard } from './sandbox-cards.js';
import { FORGETFUL_BEHAVIOUR, REPLAYING_BEHAVIOUR } from './sandbox-drills.js';

export {
  createSandboxAdapter,
  type SandboxAdapter,
  type SandboxAdapterOptions,
  type SandboxParams,
  type SandboxResult,
} from './sandbox-adapter.js';
export { sandboxCreateCard } from './sandbox-cards.js';
export { drills, FORGETFUL_BEHAVIOUR, REPLAYING_BEHAVIOUR, sandboxDrill } from './sandbox-drills.js';
export type { SandboxBehaviour, SandboxFault, SandboxProvider, SandboxRecord } from './sandbox-provider.js';
export { createSandboxProvider } from './sandbox-provider.js';
export { type SandboxServer, startSandboxServer } from './sandbox-server.js';

/** The cards of the two behaviours the drills use (`sandboxCreateCard(behaviour)` gives the card of any other). */
export const sandboxCards = {
  'sandbox-replaying': sandboxCreateCard(REPLAYING_BEHAVIOUR, {}, ['ref', 'amount']),
  'sandbox-forgetful': sandboxCreateCard(FORGETFUL_BEHAVIOUR, {}, ['ref', 'amount']),
} as const;
