export { DRILL_TOKEN, drills, gitHubDrill } from './github-drills.js';
export {
  type FaultScript,
  type GitHubSandbox,
  type GitHubSandboxOptions,
  type SandboxComment,
  type SandboxFault,
  type SandboxIssue,
  type SandboxKind,
  startGitHubSandbox,
} from './github-sandbox.js';
