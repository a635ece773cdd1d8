# The two commands of the README: `make run` and `make test`. Each installs what is missing.
SHELL := /bin/bash
# Biome is pinned to an exact 2.5.x: the registry here lacks 2.6's other-platform packages, and a
# lock file without them is refused by `npm ci`.
NPM_CI := npm ci --no-audit --no-fund --loglevel=error
STAMP := node_modules/.install-stamp
# Debian's Chromium for the browser suite; Playwright's own download cannot work here.
CHROMIUM := /usr/bin/chromium
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: install generate build migrate run smoke check typecheck lint lint-specs drift route-drift runtime-deps contract explain schema-diff bench fanout soak test test-only test-node24 fuzz sdk

install: $(STAMP)

$(STAMP): package.json package-lock.json
	$(NPM_CI)
	@touch $@

## generate: typed signatures in generated/ from openapi.yaml and schema.graphql, and the
## description of version 2 of the REST API (generated/openapi.v2.yaml) from openapi.yaml
generate: $(STAMP)
	npx openapi-typescript openapi.yaml --output generated/openapi.ts --silent
	node --import tsx tools/openapi-v2.ts
	npx graphql-codegen --config codegen.yml --silent

## build: the server compiled to dist/ (tsc -p tsconfig.build.json), which npm start runs
build: $(STAMP)
	npm run --silent build

## migrate: apply migrations to DATABASE_URL, or to the embedded database under DATA_DIR
migrate: build
	npm run --silent migrate

## sdk: the client packages, built from the specs and packed into dist/sdk/ (npm pack):
## @catalog-chat/rest-client (openapi-fetch) and @catalog-chat/graphql-client (typed documents,
## graphql-ws), each versioned as its spec (openapi.yaml's info.version, schema.graphql's first line)
sdk: $(STAMP)
	node --import tsx tools/build-sdk.ts dist/sdk

## run: install, generate, build, migrate and start the compiled service on the embedded
## defaults (`npm run dev` runs src/ in watch mode instead)
run: generate build migrate
	npm start --silent

## smoke: the compiled server starts on an in-memory database and answers /health and GraphQL
## (built without a second type check: make check has done that)
smoke: $(STAMP)
	npm run --silent build -- --noCheck
	node tools/smoke.mjs

## check: typecheck, lint, the specs' own lint, generated code and routes that match the specs,
## and runtime packages declared as dependencies
check: typecheck lint lint-specs drift route-drift runtime-deps contract

typecheck: $(STAMP)
	npx tsc --noEmit

lint: $(STAMP)
	npx biome check --error-on-warnings .

## lint-specs: openapi.yaml with Spectral (OAS and OWASP rules), schema.graphql with graphql-eslint
lint-specs: $(STAMP)
	npx spectral lint openapi.yaml --fail-severity=warn --quiet
	npx eslint --max-warnings 0 schema.graphql

drift: $(STAMP)
	@rm -rf .drift && cp -r generated .drift
	@$(MAKE) --no-print-directory -s generate >/dev/null
	@diff -r .drift generated >/dev/null || { rm -rf .drift; echo "generated/ did not match the specs; it is regenerated now: review and commit it"; exit 1; }
	@rm -rf .drift

## route-drift: the routes the server registers against the operations of openapi.yaml
route-drift: $(STAMP)
	node --import tsx tools/route-drift.ts

## contract: every REST operation driven in v1 and v2, each answer checked against the
## description of its version (on Postgres too when TEST_DATABASE_URL is set)
contract: $(STAMP)
	npx vitest run test/versions.test.ts

## runtime-deps: every package src/ loads at run time is in dependencies (npm ci --omit=dev)
runtime-deps: $(STAMP)
	node --import tsx tools/runtime-deps.ts

## explain: EXPLAIN ANALYZE of the catalog queries on 100k seeded products (DATABASE_URL for Postgres)
explain: $(STAMP)
	npm run --silent explain

## schema-diff: breaking changes of both specs since BASE (default: the previous commit)
BASE ?= HEAD~1
schema-diff: $(STAMP)
	node bin/schema-diff.mjs --git $(BASE)

## bench: req/s and p99 of the main operations against a bare Fastify baseline, and
## subscription fan-out; DATABASE_URL / REDIS_URL for Postgres and Redis
bench: $(STAMP)
	node --import tsx bench/run.ts

## fanout: SUBSCRIBERS (20,000) subscribers over INSTANCES (4) processes of the compiled
## service on DATABASE_URL and REDIS_URL: delivered/expected, p99, resident size per instance
fanout: build
	node --import tsx bench/fanout-instances.ts

## soak: SOAK_MINUTES (30) of mixed REST, GraphQL and subscription load on two processes of
## the compiled service on DATABASE_URL and REDIS_URL, reported per minute
soak: build
	node --import tsx bench/soak.ts

## test: install, check, then the test suites
test: check test-only

test-only: $(STAMP) $(CHROMIUM)
	npx vitest run

## fuzz: the spec fuzz suites alone (test/fuzz-*.test.ts), FUZZ_RUNS cases per property
## instead of make test's 20, from a new seed it prints: `make fuzz FUZZ_SEED=<seed>` (and the
## same FUZZ_RUNS) replays a run. Postgres too when TEST_DATABASE_URL is set.
FUZZ_RUNS ?= 500
fuzz: $(STAMP)
	@seed=$(or $(FUZZ_SEED),$$(node -e 'console.log(Math.floor(Math.random() * 2 ** 31))')); \
	  echo "fuzz: FUZZ_RUNS=$(FUZZ_RUNS) FUZZ_SEED=$$seed (replay: make fuzz FUZZ_SEED=$$seed FUZZ_RUNS=$(FUZZ_RUNS))"; \
	  start=$$(date +%s); \
	  FUZZ_SEED=$$seed FUZZ_RUNS=$(FUZZ_RUNS) npx vitest run test/fuzz-; status=$$?; \
	  echo "fuzz: FUZZ_SEED=$$seed FUZZ_RUNS=$(FUZZ_RUNS), $$(( $$(date +%s) - start )) s"; exit $$status

## test-node24: the vitest suites again, on Node 24 (.ci/node24 fetches it once into .cache/)
test-node24: $(STAMP) $(CHROMIUM)
	@bin=$$(.ci/node24) && echo "vitest on Node $$("$$bin/node" --version)" && \
	  PATH="$$bin:$$PATH" node node_modules/vitest/vitest.mjs run

$(CHROMIUM):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends chromium
