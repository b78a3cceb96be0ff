// The root entry: what a user of the adapter needs. The loopback sandbox and drill are in `./sandbox`.
export { createGitHubAdapter, type GitHubAdapter, type GitHubAdapterOptions } from './github-adapter.js';
export { gitHubCards } from './github-cards.js';
export type {
  CommentResult,
  GitHubOperationTypes,
  IssueResult,
  IssuesCreateCommentParams,
  IssuesCreateParams,
} from './github-operations.js';
