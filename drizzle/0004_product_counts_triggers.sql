-- product_counts holds the live products of each category, so the list's total without
-- a filter (or with only a category) is a sum over a few rows instead of a count of all.
CREATE FUNCTION product_counts_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.deleted_at IS NULL THEN
    UPDATE product_counts SET live = live - 1 WHERE category = OLD.category;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.deleted_at IS NULL THEN
    INSERT INTO product_counts (category, live) VALUES (NEW.category, 1)
    ON CONFLICT (category) DO UPDATE SET live = product_counts.live + 1;
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION product_counts_reset() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM product_counts;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER products_count_live
  AFTER INSERT OR DELETE OR UPDATE OF category, deleted_at ON products
  FOR EACH ROW EXECUTE FUNCTION product_counts_track();
--> statement-breakpoint
CREATE TRIGGER products_count_truncate
  AFTER TRUNCATE ON products
  FOR EACH STATEMENT EXECUTE FUNCTION product_counts_reset();
--> statement-breakpoint
INSERT INTO product_counts (category, live)
  SELECT category, count(*) FROM products WHERE deleted_at IS NULL GROUP BY category;
