package all

import _ "github.com/arvenza/helix/internal/component/mcp/server"
