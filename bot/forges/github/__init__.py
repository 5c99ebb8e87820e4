"""GitHub: the REST/GraphQL client, the forge, comment placement, check runs and SARIF, Actions channels."""
