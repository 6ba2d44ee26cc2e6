"""dynamo_guards: a fork of Dynamo's guard engine (placeholder)."""
