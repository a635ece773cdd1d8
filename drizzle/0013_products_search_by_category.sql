-- A search within a category is served by one GIN index over both columns: btree_gin gives
-- GIN an operator class for the category's equality. It replaces the name's own trigram
-- index, which a search alone reads no better than this one.
CREATE EXTENSION IF NOT EXISTS btree_gin;--> statement-breakpoint
CREATE INDEX "products_live_category_name_trgm_idx" ON "products" USING gin ("category","name" gin_trgm_ops) WHERE "products"."deleted_at" is null;--> statement-breakpoint
DROP INDEX "products_live_name_trgm_idx";
