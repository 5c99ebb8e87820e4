"""GitHub's GraphQL for review threads (REST cannot list or resolve them): the queries and their records."""

from __future__ import annotations

from dataclasses import dataclass


class GraphQLFailure(Exception):
    """GitHub answered a GraphQL request with errors (e.g. a token that may not resolve threads)."""


@dataclass(frozen=True)
class ReviewThread:
    id: str  # GraphQL node id
    resolved: bool
    first_comment: int | None  # REST id (databaseId) of the comment that opened the thread


THREADS_QUERY = """query($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        nodes { id isResolved comments(first: 1) { nodes { databaseId } } }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
}"""
RESOLVE_MUTATION = """mutation($threadId: ID!) {
  resolveReviewThread(input: {threadId: $threadId}) { thread { id isResolved } }
}"""
