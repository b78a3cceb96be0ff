export { createSandboxProvider } from './sandbox-provider.js';
export type { SandboxBehaviour, SandboxFault, SandboxProvider, SandboxRecord, SandboxResponse, SandboxExecuteRequest } from './sandbox-provider.js';
export { createSandboxAdapter, classifySandboxResponse, classifyNetworkError, parseRetryAfter, SANDBOX_OPERATION } from './sandbox-adapter.js';
export type { SandboxAdapterOptions, SandboxResult } from './sandbox-adapter.js';
export { sandboxCreateCard, SANDBOX_PROVIDER, SANDBOX_KEY_RULE } from './sandbox-cards.js';
export type { SandboxLimits } from './sandbox-cards.js';
export { startSandboxServer } from './sandbox-server.js';
export type { SandboxServer, SandboxServerOptions } from './sandbox-server.js';
