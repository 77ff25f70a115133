"""Google Sheets: request bodies (pure), the HTTP client and credentials, push/read/check."""
