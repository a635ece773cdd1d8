-- A category's price range, searched or not, is counted from this index alone, with no
-- table rows read: its keys are every column such a list filters and orders its matches by.
CREATE INDEX "products_live_category_price_idx" ON "products" USING btree ("category","price","created_at","id","name") WHERE "products"."deleted_at" is null;