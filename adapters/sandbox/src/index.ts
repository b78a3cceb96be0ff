// The sandbox package is itself the sandbox: the adapter, the in-memory provider, its loopback server and the drills.

export {
  createSandboxAdapter,
  type SandboxAdapter,
  type SandboxAdapterOptions,
  type SandboxParams,
  type SandboxResult,
} from './sandbox-adapter.js';
export { FORGETFUL_BEHAVIOUR, REPLAYING_BEHAVIOUR, sandboxCards, sandboxCreateCard } from './sandbox-cards.js';
export { drills, sandboxDrill } from './sandbox-drills.js';
export type { SandboxBehaviour, SandboxFault, SandboxProvider, SandboxRecord } from './sandbox-provider.js';
export { createSandboxProvider } from './sandbox-provider.js';
export { type SandboxServer, startSandboxServer } from './sandbox-server.js';
