package cli

// The message verbs: send, inbox, ack, and message (a sent message's receipts).

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/client"
)

func (c *cli) messageCommands() []*cobra.Command {
	return []*cobra.Command{c.sendCommand(), c.inboxCommand(), c.ackCommand(), c.messageCommand()}
}

func (c *cli) sendCommand() *cobra.Command {
	var priority int64
	var thread string
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "send <to> <body|->",
		Short: "Send a message to an identity or to whoever holds a node (node:<id>)",
		Long: `Send a message. <to> is an identity (its token subject) or node:<id>: the
message then reaches whoever holds the node when they read their inbox, so it
survives a handoff or a requeue. A body of - is read from stdin.`,
		Example: `  tether send node:task-1 "stop and write a summary" --priority 10
  tether send alice "review PR 42 next" --thread pr-42 --ttl 1h
  git diff | tether send node:task-1 -`,
		Args: usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			body := a[1]
			if body == "-" {
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return fmt.Errorf("error reading the body from stdin: %w", err)
				}
				body = string(b)
			}
			req := client.MessageCreate{
				To: a[0], Body: body, Priority: ifSet(cmd, "priority", priority),
				Thread: ifSet(cmd, "thread", thread),
			}
			if cmd.Flags().Changed("ttl") {
				req.TTLMS = ptrTo(millis(ttl))
			}
			return call(c, cmd, func(api *apiClient) (*client.SendMessageResponse, error) {
				return api.SendMessageWithResponse(cmd.Context(), req)
			}, func(w io.Writer, res *client.SendMessageResponse) {
				m := res.JSON201
				fmt.Fprintf(w, "sent %s to %s", m.ID, m.To)
				if m.ExpiresAt != nil {
					fmt.Fprintf(w, ", expires %s unread", relative(*m.ExpiresAt))
				}
				fmt.Fprintln(w)
			})
		},
	}
	f := cmd.Flags()
	f.Int64Var(&priority, "priority", 0, "higher is read first (-1000000 to 1000000)")
	f.StringVar(&thread, "thread", "", "a conversation to file it under")
	f.DurationVar(&ttl, "ttl", 0, "expire it if still unread this long after sending (at most 720h)")
	return cmd
}

func (c *cli) inboxCommand() *cobra.Command {
	var unread bool
	var thread, node, cursor string
	var wait time.Duration
	var limit int
	cmd := &cobra.Command{
		Use:   "inbox",
		Short: "Your messages: to your identity and to the nodes you hold; highest priority, then oldest, first",
		Long: `Your inbox: the messages sent to your identity and to every node you hold
right now, highest priority first, then oldest. Listing a message marks it
delivered to you; acknowledge it with tether ack once read. With --wait the
command waits that long (up to 60s) for a message when there is none.

Inside tether work, the runner's token is in TETHER_TOKEN, so a command can
run: tether inbox --node "$TETHER_NODE_ID" --unread.`,
		Example: `  tether inbox --unread
  tether inbox --unread --wait 30s -o json
  tether inbox --thread pr-42`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if wait < 0 || wait > time.Minute {
				return usageErrorf("--wait must be from 0 to 60s")
			}
			p := &client.ListInboxParams{
				Unread: ifSet(cmd, "unread", unread), Thread: ifSet(cmd, "thread", thread),
				Node: ifSet(cmd, "node", node), Limit: &limit, Cursor: ifSet(cmd, "cursor", cursor),
			}
			if wait > 0 {
				p.WaitMS = ptrTo(int(wait.Milliseconds()))
			}
			res, err := ask(c, func(api *apiClient) (*client.ListInboxResponse, error) {
				return api.ListInboxWithResponse(cmd.Context(), p)
			})
			if err != nil {
				return err
			}
			nextPage(cmd, res.JSON200.NextCursor, "--cursor")
			return c.emit(cmd.OutOrStdout(), res.Body, func(w io.Writer) {
				fmt.Fprintln(w, "ID\tPRIORITY\tFROM\tTO\tSTATE\tSENT\tBODY")
				for _, m := range res.JSON200.Items {
					fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", m.ID, m.Priority, m.From, m.To, m.State, stamp(m.CreatedAt), excerpt(m.Body, 60))
				}
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&unread, "unread", false, "only messages not yet acknowledged")
	f.StringVar(&thread, "thread", "", "only this thread")
	f.StringVar(&node, "node", "", "only the messages to this node (one you hold)")
	f.DurationVar(&wait, "wait", 0, "when there is nothing, wait this long for a message (a long poll, at most 60s)")
	f.IntVar(&limit, "limit", 100, "page size (at most 1000)")
	f.StringVar(&cursor, "cursor", "", "continue after a page (the cursor printed as more:)")
	return cmd
}

func (c *cli) ackCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ack <message-id>...",
		Short: "Acknowledge messages you read: their senders see the read receipt",
		Args:  usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			for _, id := range a {
				res, err := ask(c, func(api *apiClient) (*client.AckMessageResponse, error) {
					return api.AckMessageWithResponse(cmd.Context(), id)
				})
				if err != nil {
					return err
				}
				if err := c.emit(cmd.OutOrStdout(), res.Body, func(w io.Writer) {
					fmt.Fprintf(w, "%s read at %s\n", id, stamp(*res.JSON200.ReadAt))
				}); err != nil {
					return err
				}
			}
			return nil
		},
	}
	return cmd
}

func (c *cli) messageCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "message <message-id>",
		Short: "A message and its receipts: delivered to whom and when, read by whom and when",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return call(c, cmd, func(api *apiClient) (*client.GetMessageResponse, error) {
				return api.GetMessageWithResponse(cmd.Context(), a[0])
			}, func(w io.Writer, res *client.GetMessageResponse) {
				m := res.JSON200
				fmt.Fprintf(w, "id\t%s\nfrom\t%s\nto\t%s\nstate\t%s\npriority\t%d\nsent\t%s\n", m.ID, m.From, m.To, m.State, m.Priority, stamp(m.CreatedAt))
				if m.Thread != nil {
					fmt.Fprintf(w, "thread\t%s\n", *m.Thread)
				}
				if m.ExpiresAt != nil {
					fmt.Fprintf(w, "expires\t%s\n", stamp(*m.ExpiresAt))
				}
				if m.DeliveredAt != nil {
					fmt.Fprintf(w, "delivered\t%s to %s\n", stamp(*m.DeliveredAt), *m.DeliveredTo)
				}
				if m.ReadAt != nil {
					fmt.Fprintf(w, "read\t%s by %s\n", stamp(*m.ReadAt), *m.ReadBy)
				}
				fmt.Fprintf(w, "body\t%s\n", excerpt(m.Body, 200))
			})
		},
	}
}

// excerpt is s on one line, cut to n characters.
func excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
