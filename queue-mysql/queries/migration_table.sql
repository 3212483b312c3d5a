-- name: migration_table
CREATE TABLE IF NOT EXISTS {prefix}migrations (
    version    BIGINT       NOT NULL,
    name       VARCHAR(255) NOT NULL,
    applied_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (version)
) ENGINE = InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin
